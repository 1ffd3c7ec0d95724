import { DEFAULT_PAGE_SIZE } from '../api/index.js';
import { compareInstants, minusMs } from '../core/time.js';
import type { WalkCheckpoint, WalkMode } from '../core/types.js';
import { WRITER_ROW_GROUP_SIZE } from '../warehouse/index.js';

/** Where a walk begins: fresh from the watermark, or resumed from an interrupted walk's checkpoint. */
export interface WalkPlan {
  mode: WalkMode;
  /** `updated_after` for every page of every pass of this walk; null walks everything. */
  updatedAfter: string | null;
  /** Cursor to continue from; null starts at the first page. */
  after: string | null;
  /** The checkpoint resumed from, when resuming (its pass, its times, what it saw). */
  resumedFrom: WalkCheckpoint | null;
  resumed: boolean;
}

export interface StoredWalkState {
  watermark: string | null;
  walk: WalkCheckpoint | null;
  /** Where the next incremental walk starts instead of the watermark (`nextConfirmFrom`). */
  confirmFrom?: string | null;
}

/**
 * Decide how to walk a resource. An interrupted walk of the same mode resumes from its checkpoint with the
 * same `updated_after`, because a cursor is only valid for the query that produced it. A full walk ignores
 * the watermark; an incremental one starts `lookbackMs` before it (the window is inclusive, so boundary
 * records come back, and upserts make that harmless), or before `confirmFrom` when the last walk must be listed
 * again (`nextConfirmFrom`). Pure.
 */
export function planWalk(state: StoredWalkState, mode: WalkMode, lookbackMs: number): WalkPlan {
  const walk = state.walk;
  if (walk && walk.cursor !== null && walk.mode === mode) {
    return { mode, updatedAfter: walk.updatedAfter, after: walk.cursor, resumedFrom: walk, resumed: true };
  }
  if (mode === 'full' || state.watermark === null) {
    return { mode, updatedAfter: null, after: null, resumedFrom: null, resumed: false };
  }
  const confirmFrom = state.confirmFrom ?? null;
  const from = confirmFrom !== null && compareInstants(confirmFrom, state.watermark) < 0 ? confirmFrom : state.watermark;
  return { mode, updatedAfter: minusMs(from, lookbackMs), after: null, resumedFrom: null, resumed: false };
}

/**
 * Where the walk after this one starts instead of the watermark this one leaves, or null for the watermark. A record
 * deleted while a pass pages through its window shifts the records after it one place back under offset cursors:
 * the pass steps over the one the next page would have begun with, and nothing it sees changes, so no pass signal
 * can tell. So an incremental window listed over more than one page (or resumed past a page) is listed again by the
 * next walk, which starts from the watermark that stood before this one (`previous`): a change is lost only if two
 * walks in a row step over it. A single page has no page to shift, and a full walk's window is the reconcile's to check.
 * Pure.
 */
export function nextConfirmFrom(walk: { updatedAfter: string | null; passPages: number; previous: string | null }): string | null {
  return walk.updatedAfter !== null && walk.passPages > 1 ? walk.previous : null;
}

/** A clean pass, as the watermark rule sees it. */
export interface CleanPass {
  /** Server time the pass started (or the local clock's, when the service sends no `Date`). */
  passStartedAt: string;
  /** Largest `updated_at` the pass received, or null when it received nothing. */
  maxUpdatedAt: string | null;
  /** The pass's times come from the local clock: held back by `localClockMarginMs` more. */
  localClock: boolean;
}

/** How much further back a watermark placed on the local clock is held, for a clock we cannot check. */
export const LOCAL_CLOCK_MARGIN_MS = 5 * 60_000;

/**
 * The next watermark after a clean pass: the smaller of the pass's start and the largest `updated_at` it
 * received, or the previous watermark when that is later and not ahead of the pass's start (one ahead of the
 * service's clock, left by a lying `Date` header, is replaced). Never the largest `updated_at` alone (a record updated mid-walk
 * behind the cursor has a smaller one than a record updated later ahead of it), never the server time alone (a
 * `Date` header ahead of the records' clock would skip them), and a pass that received nothing keeps the previous
 * one (an empty answer says nothing about the service's clock). The lookback is taken when the next walk asks. Pure.
 */
export function nextWatermark(previous: string | null, pass: CleanPass): string | null {
  if (pass.maxUpdatedAt === null) return previous;
  let candidate = compareInstants(pass.passStartedAt, pass.maxUpdatedAt) <= 0 ? pass.passStartedAt : pass.maxUpdatedAt;
  if (pass.localClock) candidate = minusMs(candidate, LOCAL_CLOCK_MARGIN_MS);
  const keepPrevious = previous !== null && compareInstants(previous, candidate) > 0 && compareInstants(previous, pass.passStartedAt) <= 0;
  return keepPrevious ? previous : candidate;
}

export interface FlushPolicy {
  maxRows: number;
  maxAgeMs: number;
  /** The most rows a batch holds while the writer is busy (`grownBatchRows`). @defaultValue `maxRows` */
  maxGrownRows?: number;
}

/**
 * How many times `SALESYNC_FLUSH_ROWS` a batch may grow to while the writer is busy: 64,000 rows at the default,
 * about two of the writer's row groups (`WRITER_ROW_GROUP_SIZE`). A commit appending a whole row group or more has
 * DuckDB write its row groups straight to the file and log only where they are, where smaller ones go through the
 * WAL and are written again at the next checkpoint (`npm run bench:rows -- --sizes 20000,65600`; docs/performance.md).
 * A grown batch's rows wait in its stage file, not in memory (`BATCH_SPILL_BYTES`).
 */
export const BATCH_GROWTH = 32;
/**
 * The property columns up to which a batch grows the whole `BATCH_GROWTH`: wider tables grow less, so a grown
 * batch's stage holds at most `BATCH_GROWTH` × `SALESYNC_FLUSH_ROWS` × this many property cells (a stage past
 * DuckDB's memory limit spills to disk, and slows).
 */
const GROWTH_COLUMNS = 20;

/**
 * The most rows growth takes a batch to, whatever `SALESYNC_FLUSH_ROWS`: two of the writer's row groups. Past that
 * a commit gains no more from whole row groups, and an upsert's stage outgrows DuckDB's default memory limit and
 * spills, which slows it (docs/performance.md).
 */
const GROWN_ROWS_MAX = 2 * WRITER_ROW_GROUP_SIZE;

/**
 * The rows a batch may grow to while the writer is busy: `BATCH_GROWTH` × `flushRows` for a table of up to
 * `GROWTH_COLUMNS` property columns, fewer for a wider one (as many cells), at most `GROWN_ROWS_MAX`, never fewer
 * than `flushRows`. Pure.
 */
export function grownBatchRows(flushRows: number, propertyColumns: number): number {
  const cells = BATCH_GROWTH * flushRows * GROWTH_COLUMNS;
  const grown = Math.min(BATCH_GROWTH * flushRows, GROWN_ROWS_MAX, Math.floor(cells / Math.max(1, propertyColumns)));
  return Math.max(flushRows, grown);
}

/**
 * Grown batches the writer may have queued, across a process's walks, before a walk waits for its own oldest: as
 * many as one walk may have in flight (`commitsAllowed`), so a walk alone is never held back by it.
 */
export const BACKLOG_BATCHES = 3;

/**
 * The writer backlog (rows of queued commits, every walk of the process together) at which a walk waits for its
 * own oldest commit before queueing another: walks together queue what one walk outrunning the writer would, where
 * each would otherwise queue as much again. Batches still grow (fewer, larger commits cost the writer less: each
 * joins the stored table once). Pure.
 */
export function backlogCap(flushRows: number, propertyColumns: number): number {
  return BACKLOG_BATCHES * grownBatchRows(flushRows, propertyColumns);
}

/**
 * Commit buffered pages when enough rows wait, or the oldest has waited long enough, or the walk is done. While
 * the writer is busy (`writerBusy`: one of the walk's commits is still being written), the batch grows up to
 * `maxGrownRows` instead: a walk that outruns the writer commits fewer, larger batches, each a checkpoint it can
 * resume from.
 */
export function shouldFlush(
  bufferedRows: number,
  oldestAgeMs: number,
  walkDone: boolean,
  policy: FlushPolicy,
  writerBusy = false,
): boolean {
  if (walkDone) return true;
  if (bufferedRows === 0) return false;
  if (writerBusy) return bufferedRows >= (policy.maxGrownRows ?? policy.maxRows);
  return bufferedRows >= policy.maxRows || oldestAgeMs >= policy.maxAgeMs;
}

/** How much smaller each pass after the first asks its pages to be. */
const PASS_PAGE_STEP = 7;

/**
 * The page size a pass asks for. A list whose order within a tie of `updated_at` depends on the page asked for
 * (offset paging over a sort key that ties) splits a tie at a boundary the same way on every pass of one size,
 * listing one record twice and another never: each pass after the first moves every boundary. The first keeps the
 * largest page, the fewest requests. `served` is the most records a page of the walk held with another page after
 * it (null before any): a service may serve pages shorter than asked (the spec's 1 to 200 is the request's rule),
 * and asking for less than 200 of one that serves 100 would move no boundary, so the steps go down from what it
 * serves. Pure.
 */
export function passPageSize(pass: number, served: number | null = null): number {
  const base = served === null ? DEFAULT_PAGE_SIZE : Math.min(served, DEFAULT_PAGE_SIZE);
  return Math.max(1, base - PASS_PAGE_STEP * (pass - 1));
}
