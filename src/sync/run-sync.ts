import pLimit from 'p-limit';
import type { SalesApi } from '../api/types.js';
import type { ResourceName } from '../core/resources.js';
import type { WalkMode } from '../core/types.js';
import type { SalesyncError } from '../core/errors.js';
import type { SnapshotResult } from '../warehouse/index.js';
import { toSalesyncError } from './errors.js';
import { emptyResult, isSuccess, type ResourceResult, type SyncDeps, type SyncSettings } from './context.js';
import { refreshSummaries } from './summaries.js';
import { syncResource } from './sync-resource.js';

export interface SyncRunOptions {
  resources: readonly ResourceName[];
  mode: WalkMode;
  /** Resources walked at once; the shared limiter keeps them within the rate budget together. */
  concurrency: number;
  /**
   * Wraps each resource's walk: with Redis, a lease so that no two processes walk one resource at once
   * (the guard runs the walk, or records and returns a skipped run). @defaultValue the walk runs as it is
   */
  guard?: WalkGuard;
}

/** Runs `walk` under whatever makes it the only walk of `resource` (or returns a skipped result instead). */
export type WalkGuard = (
  resource: ResourceName,
  mode: WalkMode | 'backfill' | 'reconcile',
  walk: (signal: AbortSignal) => Promise<ResourceResult>,
) => Promise<ResourceResult>;

export interface SyncReport {
  ok: boolean;
  results: ResourceResult[];
  /** Requests of the whole run, the connection check included. */
  requests: number;
  durationMs: number;
  /**
   * The summaries re-read after the meeting-logs walk (summaries change without moving a log's `updated_at`), when
   * that walk completed.
   */
  summaries?: ResourceResult;
  /**
   * The run's last publish to WAREHOUSE_PATH, when its end still had something to publish: each resource's run
   * end publishes as it comes (see `WarehouseOptions.publish`), so this is usually absent.
   */
  published?: SnapshotResult;
  /**
   * The extra copy at WAREHOUSE_SNAPSHOT_PATH, published as before only after a run in which every walk completed.
   * Redundant now that WAREHOUSE_PATH itself is a published copy; kept for setups that point a BI tool at it.
   */
  snapshot?: SnapshotResult;
  /** Why the run's last publish, or the snapshot, failed (the run's data is committed all the same; `ok` is false). */
  snapshotError?: SalesyncError;
}

/** Failures that no other resource can succeed past: stop everyone rather than spend requests on them. */
const STOPS_EVERYONE = new Set([
  'unauthorized',
  'forbidden',
  'invalid_api_key_format',
  'service_unreachable',
  'warehouse_locked',
  'warehouse_disk_full',
]);

export interface WalkedResources<R> {
  results: R[];
  /** Requests of every walk, the connection check included. */
  requests: number;
}

/**
 * Check the connection, then run `walkOne` for every resource, `concurrency` at a time. A failure no other
 * resource can get past (a bad key, an unreachable service, a held file) aborts the walks under way, and the
 * ones not started yet come back as `skipped`. A wrong key fails here, before the warehouse file is touched.
 */
export async function walkResources<R extends { error?: SalesyncError | undefined; requests: number }>(
  deps: SyncDeps,
  resources: readonly ResourceName[],
  concurrency: number,
  walkOne: (resource: ResourceName, signal: AbortSignal) => Promise<R>,
  skipped: (resource: ResourceName) => R,
): Promise<WalkedResources<R>> {
  const check = deps.makeApi();
  await checkConnection(check, deps.signal);
  await deps.warehouse.ensureSchema();
  const stopAll = new AbortController();
  const signal = deps.signal ? AbortSignal.any([deps.signal, stopAll.signal]) : stopAll.signal;
  const limit = pLimit(concurrency);
  const results = await Promise.all(
    resources.map((resource) =>
      limit(async () => {
        if (signal.aborted) return skipped(resource);
        const result = await walkOne(resource, signal);
        if (result.error && STOPS_EVERYONE.has(result.error.code)) stopAll.abort(result.error);
        return result;
      }),
    ),
  );
  return { results, requests: check.stats().requests + results.reduce((sum, r) => sum + r.requests, 0) };
}

/**
 * Walk the resources incrementally (or fully); after the meeting-logs walk, re-read the summaries due (on the
 * summaries lane, so a nightly `sync` alone keeps them equal to the service). The warehouse publishes after each
 * resource's run ends, failed or not (a failing resource never holds the others back); the run ends with a last
 * publish of whatever is still unpublished, whose failure fails the run.
 */
export async function runSync(deps: SyncDeps, settings: SyncSettings, options: SyncRunOptions): Promise<SyncReport> {
  const started = Date.now();
  let summaries: ResourceResult | undefined;
  const { results, requests } = await walkResources(
    deps,
    options.resources,
    options.concurrency,
    (resource, signal) => {
      const walk = async (guardSignal: AbortSignal) => {
        const walkDeps = { ...deps, signal: AbortSignal.any([signal, guardSignal]) };
        const result = await syncResource(walkDeps, settings, resource, options.mode);
        if (resource === 'meeting-logs' && isSuccess(result.outcome)) summaries = await refreshSummaries(walkDeps, settings);
        return result;
      };
      return options.guard ? options.guard(resource, options.mode, walk) : walk(signal);
    },
    (resource) => emptyResult(resource, options.mode, 'interrupted'),
  );
  const ok = results.every((r) => isSuccess(r.outcome)) && (summaries === undefined || isSuccess(summaries.outcome));
  const remaining = await publishRemaining(deps);
  const snapshot = ok && settings.snapshotPath ? await publishSnapshot(deps, settings.snapshotPath) : {};
  const published = {
    ...remaining,
    ...snapshot,
    ...((remaining.snapshotError ?? snapshot.snapshotError) ? { snapshotError: remaining.snapshotError ?? snapshot.snapshotError } : {}),
  };
  return {
    ok: ok && !published.snapshotError,
    results,
    requests: requests + (summaries?.requests ?? 0),
    durationMs: Date.now() - started,
    ...(summaries ? { summaries } : {}),
    ...published,
  };
}

/** Publish what the run's ends left unpublished (nothing, usually); a failure is the run's. */
async function publishRemaining(deps: SyncDeps): Promise<Pick<SyncReport, 'published' | 'snapshotError'>> {
  try {
    const published = await deps.warehouse.publish();
    return published ? { published } : {};
  } catch (error) {
    const snapshotError = toSalesyncError(error);
    deps.logger.error({ code: snapshotError.code, err: snapshotError.message }, 'warehouse not published');
    return { snapshotError };
  }
}

async function publishSnapshot(deps: SyncDeps, target: string): Promise<Pick<SyncReport, 'snapshot' | 'snapshotError'>> {
  try {
    const snapshot = await deps.warehouse.publishSnapshot(target);
    deps.logger.info({ path: snapshot.path, bytes: snapshot.bytes, durationMs: snapshot.durationMs }, 'snapshot published');
    return { snapshot };
  } catch (error) {
    const snapshotError = toSalesyncError(error);
    deps.logger.error({ path: target, code: snapshotError.code, err: snapshotError.message }, 'snapshot not published');
    return { snapshotError };
  }
}

/** One cheap read that proves the address and the key before any walk starts. */
export async function checkConnection(api: SalesApi, signal?: AbortSignal): Promise<void> {
  try {
    // One page, not a walk: a walk would ask for the next page as soon as this one's cursor is read.
    await api.listUserPage({ pageSize: 1, ...(signal ? { signal } : {}) });
  } catch (error) {
    throw toSalesyncError(error);
  }
}

/** The failure that explains a failed run best: the first fatal one, else the first of any kind. */
export function primaryFailure(report: Pick<SyncReport, 'results' | 'summaries'>): ResourceResult | undefined {
  const failed = [...report.results, ...(report.summaries ? [report.summaries] : [])].filter((r) => r.error);
  return failed.find((r) => r.error?.disposition === 'fatal') ?? failed[0];
}
