import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import { createSalesApi } from '../api/index.js';
import type { SalesApi } from '../api/types.js';
import { requireService, type Config } from '../config.js';
import { createLimiter, type LimiterOptions } from '../limiter/index.js';
import type { RateLane, RateLimiter } from '../core/rate-limiter.js';
import { openWarehouse } from '../warehouse/index.js';
import type { Warehouse } from '../warehouse/types.js';
import type { ProgressSink } from './progress.js';
import type { SyncDeps, SyncSettings } from './sync-resource.js';
import type { SummariesOptions } from './summaries.js';

/** The one place that wires a client, a limiter and a warehouse together from a Config. */
export interface SyncEnvironment {
  /** Release the warehouse file and the limiter's resources: call when the run (or the worker) is done. */
  close(): Promise<void>;
  deps: SyncDeps;
  settings: SyncSettings;
  limiter: RateLimiter;
  warehouse: Warehouse;
  /** The summaries job's window and final statuses (from the config). */
  summaries?: SummariesOptions;
}

export interface EnvironmentOptions {
  logger: Logger;
  progress?: ProgressSink;
  signal?: AbortSignal;
  /** A limiter made elsewhere; otherwise one is made from the config (see `redis`). */
  limiter?: RateLimiter;
  /**
   * With a client (workers, and the CLI when REDIS_URL is set), the limiter is the one every process shares
   * through Redis; without, the in-process token bucket. The caller owns and closes the client.
   */
  redis?: Redis;
  /** Which share of the rate budget this environment's clients spend. @defaultValue 'sync' */
  lane?: RateLane;
}

/**
 * A warehouse for `config`. Runs (`forRun`) keep the file open between their calls for `lingerMs`; readers
 * (status, query, export) open and close per call. Whoever makes a run's warehouse closes it when done.
 */
export function createWarehouse(config: Config, logger: Logger, options: { forRun?: boolean } = {}): Warehouse {
  return openWarehouse({
    path: config.warehousePath,
    lockTimeoutMs: config.lockTimeoutMs,
    lingerMs: options.forRun ? config.lingerMs : 0,
    ...(config.warehouseMemoryLimit ? { memoryLimit: config.warehouseMemoryLimit } : {}),
    logger,
  });
}

/** The limiter's settings from a Config: the service's limits, the lanes' shares, the Redis key prefix. */
export function limiterOptions(config: Config, logger?: Logger): LimiterOptions {
  return {
    perKeyPerMinute: config.perKeyPerMinute,
    perOrgPerMinute: config.perOrgPerMinute,
    laneShares: { backfill: config.backfillShare, summaries: config.summariesShare },
    prefix: config.redisPrefix,
    ...(logger ? { logger } : {}),
  };
}

export function createSyncEnvironment(config: Config, options: EnvironmentOptions): SyncEnvironment {
  const service = requireService(config);
  const limiter = options.limiter ?? createLimiter(limiterOptions(config, options.logger), options.redis ?? null);
  const makeApi = (): SalesApi =>
    createSalesApi({
      baseUrl: service.baseUrl,
      apiKeys: service.apiKeys,
      limiter,
      ...(options.lane ? { lane: options.lane } : {}),
      logger: options.logger,
      timeoutMs: config.requestTimeoutMs,
      retry: { limit: config.retryLimit, baseDelayMs: config.retryBaseDelayMs },
    });
  // Fail on a malformed key now, before anything else happens.
  makeApi();
  const warehouse = createWarehouse(config, options.logger, { forRun: true });
  return {
    close: async () => {
      await warehouse.close();
      await (limiter as { close?: () => Promise<void> }).close?.();
    },
    limiter,
    warehouse,
    deps: {
      makeApi,
      warehouse,
      logger: options.logger,
      ...(options.progress ? { progress: options.progress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    },
    summaries: { windowMs: config.summariesWindowMs, finalStatuses: config.summariesFinalStatuses },
    settings: {
      lookbackMs: config.lookbackMs,
      flushRows: config.flushRows,
      flushIntervalMs: config.flushIntervalMs,
      detailConcurrency: config.detailConcurrency,
      snapshotPath: config.snapshotPath,
    },
  };
}
