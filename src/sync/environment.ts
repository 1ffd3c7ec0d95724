import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import { baseUrlWarnings, createSalesApi } from '../api/index.js';
import type { SalesApi } from '../api/types.js';
import { requireHashKey, requireService, type Config } from '../config.js';
import { createLimiter, type LimiterOptions } from '../limiter/index.js';
import type { RateLane, RateLimiter } from '../core/rate-limiter.js';
import { openWarehouse, writerPathFor } from '../warehouse/index.js';
import type { Warehouse } from '../warehouse/types.js';
import type { ProgressSink } from './progress.js';
import type { SyncDeps, SyncSettings } from './context.js';
import { PolicyApplier, withPropertyPolicy } from './property-policy.js';
import { paced, v8FullCollection } from './garbage-collection.js';
import { WriterBacklog } from './writer-backlog.js';

/** The one place that wires a client, a limiter and a warehouse together from a Config. */
export interface SyncEnvironment {
  /** Release the warehouse file and the limiter's resources: call when the run (or the worker) is done. */
  close(): Promise<void>;
  deps: SyncDeps;
  settings: SyncSettings;
  limiter: RateLimiter;
  warehouse: Warehouse;
}

export interface EnvironmentOptions {
  logger: Logger;
  progress?: ProgressSink;
  signal?: AbortSignal;
  /** Wraps the limiter the environment makes (the worker counts the time requests wait for tokens). */
  meter?: (limiter: RateLimiter) => RateLimiter;
  /**
   * With a client (workers, and the CLI when REDIS_URL is set), the limiter is the one every process shares
   * through Redis; without, the in-process token bucket. The caller owns and closes the client.
   */
  redis?: Redis;
  /** Which share of the rate budget this environment's clients spend. @defaultValue 'sync' */
  lane?: RateLane;
  /** See `WarehouseOptions.batchSpillBytes` (tests make every batch spill). */
  batchSpillBytes?: number;
}

/**
 * A warehouse for `config`. `WAREHOUSE_PATH` is the analysts' file, which no salesync process opens read-write:
 * - a run's warehouse (`forRun`: sync, backfill, reconcile, summaries, the worker) works on the writer's own file
 *   (`writerPathFor`: `<dir>/.salesync/<name>.writer.duckdb`), keeps it open between its calls for `lingerMs`, and
 *   publishes it to `WAREHOUSE_PATH` after each run's end and every
 *   SALESYNC_PUBLISH_EVERY during a long walk;
 * - any other (status, query, export) reads the published file READ_ONLY, per call: it never waits for a writer.
 * Whoever makes a run's warehouse closes it when done.
 */
export function createWarehouse(config: Config, logger: Logger, options: { forRun?: boolean; batchSpillBytes?: number } = {}): Warehouse {
  const common = {
    lockTimeoutMs: config.lockTimeoutMs,
    ...(config.warehouseMemoryLimit ? { memoryLimit: config.warehouseMemoryLimit } : {}),
    logger,
  };
  if (!options.forRun) return openWarehouse({ ...common, path: config.warehousePath, readOnly: true });
  return openWarehouse({
    ...common,
    path: writerPathFor(config.warehousePath),
    lingerMs: config.lingerMs,
    ...(options.batchSpillBytes === undefined ? {} : { batchSpillBytes: options.batchSpillBytes }),
    publish: {
      path: config.warehousePath,
      mode: config.publishMode,
      group: config.publishGroup,
      everyMs: config.publishEveryMs,
    },
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
  requireHashKey(config);
  // One applier for every client of the environment: each walk's records come out policy-applied.
  const propertyPolicy = new PolicyApplier(config.propertyPolicy, config.hashKey);
  for (const line of baseUrlWarnings(service.baseUrl)) options.logger.warn({ setting: 'SALES_API_BASE_URL' }, line);
  const shared = createLimiter(limiterOptions(config, options.logger), options.redis ?? null);
  const limiter = options.meter ? options.meter(shared) : shared;
  const makeApi = (lane: RateLane | undefined = options.lane): SalesApi =>
    withPropertyPolicy(
      createSalesApi({
        baseUrl: service.baseUrl,
        apiKeys: service.apiKeys,
        limiter,
        ...(lane ? { lane } : {}),
        logger: options.logger,
        timeoutMs: config.requestTimeoutMs,
        retry: { limit: config.retryLimit, baseDelayMs: config.retryBaseDelayMs, maxRetryAfterMs: config.maxRetryAfterMs },
      }),
      propertyPolicy,
    );
  // Fail on a malformed key now, before anything else happens.
  makeApi();
  const warehouse = createWarehouse(config, options.logger, {
    forRun: true,
    ...(options.batchSpillBytes === undefined ? {} : { batchSpillBytes: options.batchSpillBytes }),
  });
  return {
    // In order: the warehouse (its last commit and publish), then the limiter; the caller closes Redis.
    close: async () => {
      await warehouse.close();
      await shared.close();
    },
    limiter,
    warehouse,
    deps: {
      makeApi,
      warehouse,
      propertyPolicy,
      logger: options.logger,
      // Every walk of this process queues for the one writer: they share what may wait for it, and collect the
      // JS heap's garbage while they wait (docs/performance.md).
      writerBacklog: new WriterBacklog(collectWhileWaiting()),
      ...(options.progress ? { progress: options.progress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    },
    settings: syncSettings(config),
  };
}

/**
 * A full collection while walks wait for the writer: at most once a second, and within 5 % of the main thread
 * however large the live heap; nothing where V8 will not collect on demand.
 */
function collectWhileWaiting(): () => void {
  const collect = v8FullCollection();
  return collect ? paced(collect, { minIntervalMs: 1000, share: 0.05 }) : () => undefined;
}

/** What a walk needs to know of the configuration. */
export function syncSettings(config: Config): SyncSettings {
  return {
    lookbackMs: config.lookbackMs,
    flushRows: config.flushRows,
    flushIntervalMs: config.flushIntervalMs,
    detailConcurrency: config.detailConcurrency,
    maxPasses: config.maxPasses,
    deleteShare: config.deleteShare,
    summaries: { windowMs: config.summariesWindowMs, finalStatuses: config.summariesFinalStatuses, recheckMs: config.summariesRecheckMs },
    snapshotPath: config.snapshotPath,
  };
}
