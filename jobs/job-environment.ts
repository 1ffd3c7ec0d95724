import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../src/config.js';
import type { RateLimiter } from '../src/core/rate-limiter.js';
import { createLimiter } from '../src/limiter/index.js';
import { limiterOptions } from '../src/sync/environment.js';
import { createSyncEnvironment, type SyncDeps, type SyncEnvironment } from '../src/sync/index.js';

export interface JobEnvironmentOptions {
  logger: Logger;
  signal: AbortSignal;
  /** The Redis the limiter is shared through (null: the in-process limiter of a laptop run). */
  redis: Redis | null;
  /** Wraps the limiter (the worker counts tokens waited). */
  meter?: (limiter: RateLimiter) => RateLimiter;
}

/**
 * What the worker's jobs and a Redis-backed `salesync sync` walk with: one environment (one Warehouse, whose
 * calls run one at a time, and one limiter) for every job of the process, plus clients on the backfill and
 * summaries lanes of the same limiter, so long backfills and sweeps never take the scheduled syncs' budget.
 */
export interface JobEnvironment {
  env: SyncEnvironment;
  backfillDeps: SyncDeps;
  summariesDeps: SyncDeps;
  /** Stop the shared limiter's timers and subscriptions (the caller closes Redis itself). */
  close(): Promise<void>;
}

export function createJobEnvironment(config: Config, options: JobEnvironmentOptions): JobEnvironment {
  const shared = createLimiter(limiterOptions(config, options.logger), options.redis);
  const limiter = options.meter ? options.meter(shared) : shared;
  const make = (lane?: 'backfill' | 'summaries') =>
    createSyncEnvironment(config, { logger: options.logger, signal: options.signal, limiter, ...(lane ? { lane } : {}) });
  const env = make();
  // The lane environments' own Warehouses are never used (they open nothing until asked): every write goes
  // through `env`'s, whose calls run one at a time.
  const onLane = (lane: 'backfill' | 'summaries'): SyncDeps => ({ ...env.deps, makeApi: make(lane).deps.makeApi });
  return {
    env,
    backfillDeps: onLane('backfill'),
    summariesDeps: onLane('summaries'),
    close: async () => {
      await env.warehouse.close();
      const closable = shared as RateLimiter & { close?: () => Promise<void> };
      await closable.close?.();
    },
  };
}
