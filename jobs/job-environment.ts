import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../src/config.js';
import type { RateLimiter } from '../src/core/rate-limiter.js';
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
 * What the worker's jobs and a Redis-backed backfill walk with: one environment (one Warehouse, whose calls run
 * one at a time, and one limiter) for every job of the process, with clients on the backfill and summaries lanes
 * of that limiter, so long backfills and sweeps never take the scheduled syncs' budget.
 */
export interface JobEnvironment {
  env: SyncEnvironment;
  backfillDeps: SyncDeps;
  summariesDeps: SyncDeps;
  /** Close the warehouse, then the limiter (the caller closes Redis itself). */
  close(): Promise<void>;
}

export function createJobEnvironment(config: Config, options: JobEnvironmentOptions): JobEnvironment {
  const env = createSyncEnvironment(config, {
    logger: options.logger,
    signal: options.signal,
    ...(options.redis ? { redis: options.redis } : {}),
    ...(options.meter ? { meter: options.meter } : {}),
  });
  // A run that names its own lane (the summaries re-read of a sync) keeps it; every other spends the lane's.
  const onLane = (lane: 'backfill' | 'summaries'): SyncDeps => ({ ...env.deps, makeApi: (asked) => env.deps.makeApi(asked ?? lane) });
  return { env, backfillDeps: onLane('backfill'), summariesDeps: onLane('summaries'), close: () => env.close() };
}
