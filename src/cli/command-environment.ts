import type { Redis } from 'ioredis';
import type { SalesyncError } from '../core/errors.js';
import { createSyncEnvironment, walkLeaseGuard, type SyncEnvironment, type WalkGuard } from '../sync/index.js';
import type { Warehouse } from '../warehouse/types.js';
import type { CliRuntime } from './runtime.js';

/** What a command shares with every other process through REDIS_URL. */
export interface SharedRedis {
  /** The connection the rate limiter draws its tokens through (pass it to createSyncEnvironment). */
  redis: Redis;
  /** One walk per resource across every process: waits up to SALESYNC_LEASE_WAIT for one under way, then skips. */
  guard(warehouse: Warehouse): WalkGuard;
  close(): Promise<void>;
}

/**
 * Connect to REDIS_URL, or null when it is not set; `redis_unavailable` when it does not answer within
 * SALESYNC_REDIS_TIMEOUT. The modules load only then: a command run without Redis never loads BullMQ (the lease
 * keys are named beside the queue's).
 */
export async function connectShared(runtime: CliRuntime, onLost?: (failure: SalesyncError) => void): Promise<SharedRedis | null> {
  const { config, logger, signal } = runtime;
  if (!config.redisUrl) return null;
  const { openRedis } = await import('../redis/index.js');
  const redis = await openRedis(config.redisUrl, { timeoutMs: config.redisTimeoutMs, signal, log: logger, ...(onLost ? { onLost } : {}) });
  return {
    redis,
    guard: (warehouse) =>
      walkLeaseGuard({
        redis,
        prefix: config.redisPrefix,
        warehouse,
        warehousePath: config.warehousePath,
        logger,
        ttlMs: config.leaseTtlMs,
        waitMs: config.leaseWaitMs,
        signal,
      }),
    close: () =>
      redis.quit().then(
        () => undefined,
        () => redis.disconnect(),
      ),
  };
}

/**
 * Run `body` with the command's sync environment: the runtime's logger, signal and progress display, and with
 * REDIS_URL the limiter every process shares and the resource lease (`guard`, undefined without Redis). The
 * environment is closed, then Redis, however `body` ends.
 */
export async function withSyncEnvironment<T>(
  runtime: CliRuntime,
  options: { lane?: 'summaries' },
  body: (env: SyncEnvironment, guard: WalkGuard | undefined) => Promise<T>,
): Promise<T> {
  // Redis gone for longer than SALESYNC_REDIS_TIMEOUT mid-run: the walks stop as on a signal, committing what
  // they fetched, and the command fails with the connection's own redis_unavailable line.
  const lost = new AbortController();
  const shared = await connectShared(runtime, (failure) => lost.abort(failure));
  try {
    const env = createSyncEnvironment(runtime.config, {
      logger: runtime.logger,
      signal: AbortSignal.any([runtime.signal, lost.signal]),
      ...options,
      ...(runtime.display ? { progress: runtime.display } : {}),
      ...(shared ? { redis: shared.redis } : {}),
    });
    try {
      const result = await body(env, shared?.guard(env.warehouse));
      if (lost.signal.aborted) throw lost.signal.reason;
      return result;
    } catch (error) {
      throw lost.signal.aborted ? lost.signal.reason : error;
    } finally {
      await env.close();
    }
  } finally {
    await shared?.close();
  }
}
