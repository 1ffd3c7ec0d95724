import type { Logger } from 'pino';
import { createSalesApi } from '../api/index.js';
import type { SalesApi } from '../api/types.js';
import { requireService, type Config } from '../config.js';
import { TokenBucketLimiter } from '../limiter/index.js';
import type { RateLane, RateLimiter } from '../core/rate-limiter.js';
import { openWarehouse } from '../warehouse/index.js';
import type { Warehouse } from '../warehouse/types.js';
import type { ProgressSink } from './progress.js';
import type { SyncDeps, SyncSettings } from './sync-resource.js';

/** The one place that wires a client, a limiter and a warehouse together from a Config. */
export interface SyncEnvironment {
  deps: SyncDeps;
  settings: SyncSettings;
  limiter: RateLimiter;
  warehouse: Warehouse;
}

export interface EnvironmentOptions {
  logger: Logger;
  progress?: ProgressSink;
  signal?: AbortSignal;
  /** Defaults to the in-process token bucket; a shared limiter is passed in by the workers. */
  limiter?: RateLimiter;
  /** Which share of the rate budget this environment's clients spend. @defaultValue 'sync' */
  lane?: RateLane;
}

export function createWarehouse(config: Config, logger: Logger): Warehouse {
  return openWarehouse({ path: config.warehousePath, lockTimeoutMs: config.lockTimeoutMs, logger });
}

export function createSyncEnvironment(config: Config, options: EnvironmentOptions): SyncEnvironment {
  const service = requireService(config);
  const limiter =
    options.limiter ??
    new TokenBucketLimiter({ perKeyPerMinute: config.perKeyPerMinute, perOrgPerMinute: config.perOrgPerMinute });
  const makeApi = (): SalesApi =>
    createSalesApi({
      baseUrl: service.baseUrl,
      apiKey: service.apiKey,
      limiter,
      ...(options.lane ? { lane: options.lane } : {}),
      logger: options.logger,
      timeoutMs: config.requestTimeoutMs,
      retry: { limit: config.retryLimit, baseDelayMs: config.retryBaseDelayMs },
    });
  // Fail on a malformed key now, before anything else happens.
  makeApi();
  const warehouse = createWarehouse(config, options.logger);
  return {
    limiter,
    warehouse,
    deps: {
      makeApi,
      warehouse,
      logger: options.logger,
      ...(options.progress ? { progress: options.progress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    },
    settings: {
      lookbackMs: config.lookbackMs,
      flushRows: config.flushRows,
      flushIntervalMs: config.flushIntervalMs,
      detailConcurrency: config.detailConcurrency,
    },
  };
}
