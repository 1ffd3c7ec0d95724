import type { Logger } from 'pino';
import type { SalesApi } from '../api/types.js';
import type { SalesyncError } from '../core/errors.js';
import type { RateLane } from '../core/rate-limiter.js';
import type { ResourceName } from '../core/resources.js';
import type { RunOutcome, RunStart, Warehouse } from '../warehouse/types.js';
import type { ProgressSink } from './progress.js';
import type { PolicyApplier } from './property-policy.js';
import type { WriterBacklog } from './writer-backlog.js';

/** What every walk is given: made once per run by the environment, passed in, never reached for. */
export interface SyncDeps {
  /**
   * A fresh client per walk, so each run counts its own requests; all share one limiter. `lane` picks the share
   * of the budget it spends. @defaultValue the environment's lane
   */
  makeApi(lane?: RateLane): SalesApi;
  warehouse: Warehouse;
  logger: Logger;
  progress?: ProgressSink;
  /** Aborting stops the walk after committing the pages already fetched. */
  signal?: AbortSignal;
  /**
   * The property policy: every client `makeApi` returns already applies it; each run of a record resource first
   * brings what is stored in line with it (`enforcePropertyPolicy`). @defaultValue none: nothing is checked
   */
  propertyPolicy?: PolicyApplier;
  /** Local clock, for bookkeeping and for a service that sends no `Date` header; never the watermark otherwise. */
  now?: () => Date;
  /**
   * Rows queued for the warehouse's writer by every walk sharing it: one per process, so walks together hold what
   * the writer can take next (see `backlogCap`). @defaultValue each walk its own
   */
  writerBacklog?: WriterBacklog;
}

/** The summaries' re-read window and the operator's declared final statuses. */
export interface SummariesSettings {
  /** Only logs created this long before the server's now are re-read. @defaultValue 14 days */
  windowMs: number;
  /**
   * Statuses the operator declares final (`SALESYNC_SUMMARIES_FINAL`); null learns settledness from re-reads
   * spaced ever further apart. @defaultValue null
   */
  finalStatuses: readonly string[] | null;
  /**
   * Spacing of a log's re-reads after one that found its summaries changed (or the first); each unchanged read
   * doubles it. @defaultValue 1 hour for `sync` and the worker's job; `salesync summaries` polls at 5 minutes
   */
  recheckMs: number;
}

export interface SyncSettings {
  /** How far before the watermark an incremental walk starts. */
  lookbackMs: number;
  /** Rows buffered before a commit. */
  flushRows: number;
  /** Longest a fetched page waits for its commit. */
  flushIntervalMs: number;
  /** Meeting-log single views in flight per walk. */
  detailConcurrency: number;
  /** Passes over one window before a walk that keeps seeing the list move gives up for this run. @defaultValue 3 */
  maxPasses: number;
  /**
   * Share of a table's live rows a reconcile may mark deleted without `force`: more missing at once is likelier a
   * service fault than deletions. @defaultValue 0.1
   */
  deleteShare: number;
  summaries: SummariesSettings;
  /** Where `runSync` publishes a read-only copy of the warehouse after a successful run. @defaultValue none */
  snapshotPath?: string | null;
}

export type RunMode = RunStart['mode'];

/** What one run of one resource did, whatever its kind: returned to the caller and recorded in `sync_runs`. */
export interface ResourceResult {
  resource: ResourceName;
  mode: RunMode;
  outcome: RunOutcome;
  resumed: boolean;
  /** List pages walked, every pass included. */
  pages: number;
  /** Records received from list pages. */
  records: number;
  /** Records committed to the warehouse. */
  written: number;
  /** Single views fetched (meeting logs; a reconcile's confirmations). */
  details: number;
  requests: number;
  retries: number;
  rateLimited: number;
  durationMs: number;
  /** The watermark after the run (unchanged unless a clean pass completed). */
  watermark: string | null;
  /** Drift: rows whose content differed from the mirror (a reconcile). */
  changed: number;
  /** Rows a reconcile marked deleted, each confirmed gone. */
  deleted: number;
  /** Meeting logs whose summaries differed from the mirror. */
  summariesChanged: number;
  /** Records put in quarantine. */
  rejected: number;
  /** Passes over the window (a pass that saw the list move is walked again). */
  passes: number;
  /** False when the last pass still saw the list move: the watermark stayed where it was. */
  settled: boolean;
  error?: SalesyncError;
}

/** A result before anything happened: also what a walk that never ran (skipped) reports. */
export function emptyResult(resource: ResourceName, mode: RunMode, outcome: RunOutcome = 'running'): ResourceResult {
  return {
    resource,
    mode,
    outcome,
    resumed: false,
    pages: 0,
    records: 0,
    written: 0,
    details: 0,
    requests: 0,
    retries: 0,
    rateLimited: 0,
    durationMs: 0,
    watermark: null,
    changed: 0,
    deleted: 0,
    summariesChanged: 0,
    rejected: 0,
    passes: 0,
    settled: true,
  };
}

/** A run that completed: with records in quarantine it says so. */
export function isSuccess(outcome: RunOutcome): boolean {
  return outcome === 'succeeded' || outcome === 'succeeded_with_rejects';
}
