import { minusMs } from '../core/time.js';
import type { WalkCheckpoint, WalkMode } from '../core/types.js';

/** Where a walk begins: fresh from the watermark, or resumed from an interrupted walk's checkpoint. */
export interface WalkPlan {
  mode: WalkMode;
  /** `updated_after` for every page of this walk; null walks everything. */
  updatedAfter: string | null;
  /** Cursor to continue from; null starts at the first page. */
  after: string | null;
  /** Server time the walk started at, when resuming (a fresh walk learns it from its first response). */
  startedAt: string | null;
  resumed: boolean;
}

export interface StoredWalkState {
  watermark: string | null;
  walk: WalkCheckpoint | null;
}

/**
 * Decide how to walk a resource. An interrupted walk of the same mode resumes from its checkpoint with the
 * same `updated_after`, because a cursor is only valid for the query that produced it. A full walk ignores
 * the watermark; an incremental one starts `lookbackMs` before it (the window is inclusive, so boundary
 * records come back, and upserts make that harmless).
 */
export function planWalk(state: StoredWalkState, mode: WalkMode, lookbackMs: number): WalkPlan {
  const walk = state.walk;
  if (walk && walk.cursor !== null && walk.mode === mode) {
    return { mode, updatedAfter: walk.updatedAfter, after: walk.cursor, startedAt: walk.startedAt, resumed: true };
  }
  if (mode === 'full' || state.watermark === null) {
    return { mode, updatedAfter: null, after: null, startedAt: null, resumed: false };
  }
  return { mode, updatedAfter: minusMs(state.watermark, lookbackMs), after: null, startedAt: null, resumed: false };
}

/**
 * The next watermark is the server time at which the walk started, never the largest `updated_at` seen:
 * a record updated mid-walk behind the cursor has a smaller `updated_at` than one updated later ahead of it,
 * and a max-seen watermark would skip it for good.
 */
export function nextWatermark(walkStartedAt: string): string {
  return walkStartedAt;
}

export interface FlushPolicy {
  maxRows: number;
  maxAgeMs: number;
}

/** Commit buffered pages when enough rows wait, or the oldest has waited long enough, or the walk is done. */
export function shouldFlush(bufferedRows: number, oldestAgeMs: number, walkDone: boolean, policy: FlushPolicy): boolean {
  if (walkDone) return true;
  if (bufferedRows === 0) return false;
  return bufferedRows >= policy.maxRows || oldestAgeMs >= policy.maxAgeMs;
}
