import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { SalesyncError } from '../core/errors.js';
import type { ResourceName } from '../core/resources.js';
import { acquireLease, resourceLeaseKey } from '../lease/index.js';
import type { ResourceResult } from './context.js';
import type { WalkGuard } from './run-sync.js';
import { recordSkippedRun } from './tracked-run.js';
import type { Warehouse } from '../warehouse/types.js';

export interface WalkLeaseOptions {
  redis: Redis;
  prefix: string;
  warehouse: Warehouse;
  /**
   * WAREHOUSE_PATH, which names the leases (as it names the worker's warehouse lease): the Warehouse's own `path`
   * may be its writer's file beside it. @defaultValue `warehouse.path`
   */
  warehousePath?: string;
  logger: Logger;
  /** How long a crashed walker keeps the resource before the lease lapses. */
  ttlMs: number;
  /** How long to wait for a resource another process is walking; 0 skips at once. */
  waitMs: number;
  /** Stops the waiting (shutdown). */
  signal?: AbortSignal;
}

/**
 * One walk per resource at a time, across every process sharing the Redis: scheduled syncs, backfills,
 * reconciles and manual `salesync sync`. The later one waits up to `waitMs`, then is skipped, says so, and is
 * recorded in `sync_runs` as `skipped` (the walk already running covers what it would have fetched).
 */
export function walkLeaseGuard(options: WalkLeaseOptions): WalkGuard {
  return async (resource, mode, walk) => {
    const key = resourceLeaseKey(options.prefix, options.warehousePath ?? options.warehouse.path, resource);
    let holder = 'another process';
    const lease = await acquireLease(options.redis, key, {
      ttlMs: options.ttlMs,
      waitMs: options.waitMs,
      ...(options.signal ? { signal: options.signal } : {}),
      onHeld: (who) => {
        holder = who;
        options.logger.info(
          { resource, holder: who },
          options.waitMs > 0
            ? `${resource} is being walked by ${who}: waiting up to ${Math.ceil(options.waitMs / 1000)} s for it to finish`
            : `${resource} is being walked by ${who}: skipping this run`,
        );
      },
    });
    if (!lease) {
      const runMode = resource === 'users' && mode !== 'backfill' && mode !== 'reconcile' ? 'refresh' : mode;
      const message = `skipped: ${holder} was walking ${resource}`;
      options.logger.warn({ resource, holder, mode: runMode }, message);
      return recordSkippedRun(options.warehouse, resource, runMode, message);
    }
    try {
      // Losing the lease (Redis lost it, or this process stalled past its ttl) stops the walk at its next page.
      const result = await walk(lease.lost);
      return lease.lost.aborted && result.outcome === 'interrupted' && !result.error ? leaseLost(options, resource, result) : result;
    } finally {
      await lease
        .release()
        .catch((error: unknown) =>
          options.logger.warn({ resource, err: String(error) }, 'could not release the walk lease; it lapses by itself'),
        );
    }
  };
}

/**
 * A walk stopped because its lease vanished has not finished, and nobody asked it to stop: without an error a
 * manual sync or backfill would exit 0 with the resource not walked to its end.
 */
function leaseLost(options: WalkLeaseOptions, resource: ResourceName, result: ResourceResult): ResourceResult {
  const error = new SalesyncError(
    'walk_lease_lost',
    `lost the lease on walking ${resource} (Redis lost it, e.g. restarted, or this process stalled past SALESYNC_LEASE_TTL): ` +
      'stopped so that no two processes walk it at once; what was fetched is committed, run it again to resume',
    { disposition: 'retriable', context: { resource } },
  );
  options.logger.warn({ resource, code: error.code }, error.message);
  return { ...result, error };
}
