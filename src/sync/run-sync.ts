import pLimit from 'p-limit';
import type { SalesApi } from '../api/types.js';
import type { ResourceName } from '../core/resources.js';
import type { WalkMode } from '../core/types.js';
import type { SalesyncError } from '../core/errors.js';
import type { SnapshotResult } from '../warehouse/index.js';
import { toSalesyncError } from './errors.js';
import { syncResource, type ResourceResult, type SyncDeps, type SyncSettings } from './sync-resource.js';

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
  /** The read-only copy published after the run (when `settings.snapshotPath` is set and the run succeeded). */
  snapshot?: SnapshotResult;
  /** Why the snapshot could not be published (the run's data is committed all the same; `ok` is false). */
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

/** Walk the resources incrementally (or fully), then publish the snapshot when every one succeeded. */
export async function runSync(deps: SyncDeps, settings: SyncSettings, options: SyncRunOptions): Promise<SyncReport> {
  const started = Date.now();
  const { results, requests } = await walkResources(
    deps,
    options.resources,
    options.concurrency,
    (resource, signal) => {
      const walk = (guardSignal: AbortSignal) =>
        syncResource({ ...deps, signal: AbortSignal.any([signal, guardSignal]) }, settings, resource, options.mode);
      return options.guard ? options.guard(resource, options.mode, walk) : walk(signal);
    },
    (resource) => skipped(resource, options.mode),
  );
  const ok = results.every((r) => r.outcome === 'succeeded');
  // Only a complete run is published: readers of the snapshot never see a run half-way.
  const published = ok && settings.snapshotPath ? await publishSnapshot(deps, settings.snapshotPath) : {};
  return {
    ok: ok && !published.snapshotError,
    results,
    requests,
    durationMs: Date.now() - started,
    ...published,
  };
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

function skipped(resource: ResourceName, mode: WalkMode): ResourceResult {
  return {
    resource, mode, outcome: 'interrupted', resumed: false, pages: 0, records: 0, written: 0, details: 0,
    requests: 0, retries: 0, rateLimited: 0, durationMs: 0, watermark: null,
  };
}

/** The failure that explains a failed run best: the first fatal one, else the first of any kind. */
export function primaryFailure(report: SyncReport): ResourceResult | undefined {
  const failed = report.results.filter((r) => r.error);
  return failed.find((r) => r.error?.disposition === 'fatal') ?? failed[0];
}
