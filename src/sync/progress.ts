import { resourceDescriptor, type RecordResourceName, type ResourceName } from '../core/resources.js';
import type { RunRow, RunStart, Warehouse } from '../warehouse/types.js';

/** The kind of run (`RunMode` in context.ts, which imports this module). */
type RunMode = RunStart['mode'];

export type ResourcePhase = 'queued' | 'properties' | 'walking' | 'committing' | 'done' | 'failed' | 'interrupted';

/** The run has ended, one way or another: its figures are final. */
export function isFinishedPhase(phase: ResourcePhase): boolean {
  return phase === 'done' || phase === 'failed' || phase === 'interrupted';
}

export interface ResourceProgress {
  resource: ResourceName;
  /** The kind of run (a sync's walk and a summaries refresh of meeting logs are two runs). @defaultValue unknown */
  mode?: RunMode;
  phase: ResourcePhase;
  pages: number;
  /** Records received by this run. */
  records: number;
  /** Records a resumed walk received in the runs before this one (its checkpoint's `received`): it counts on. */
  recordsBefore: number;
  requests: number;
  /** Records committed so far. */
  written: number;
  startedAtMs: number;
  resumed: boolean;
  /** Records the run expects to receive in all, when a cheap read says (see `expectedRecords`). @defaultValue unknown */
  expected?: number;
}

/** What moves between reports: a display on its own clock reads it (requests go on while single views are fetched). */
export interface LiveProgress {
  requests(): number;
}

/** Where a walk reports how it is doing: the CLI draws it, a job forwards it, tests ignore it. */
export interface ProgressSink {
  update(progress: Readonly<ResourceProgress>, live?: LiveProgress): void;
}

export const silentProgress: ProgressSink = { update: () => undefined };

/** A walk's progress, and `report(phase)` that stamps the requests made so far and hands a copy to `sink`. */
export function trackProgress(
  resource: ResourceName,
  startedAtMs: number,
  requestsSoFar: () => number,
  sink: ProgressSink = silentProgress,
  mode?: RunMode,
): { progress: ResourceProgress; report: (phase?: ResourcePhase) => void } {
  const progress: ResourceProgress = {
    resource,
    ...(mode ? { mode } : {}),
    phase: 'properties',
    pages: 0,
    records: 0,
    recordsBefore: 0,
    requests: 0,
    written: 0,
    startedAtMs,
    resumed: false,
  };
  const live: LiveProgress = { requests: requestsSoFar };
  const report = (phase: ResourcePhase = progress.phase) => {
    progress.phase = phase;
    progress.requests = requestsSoFar();
    sink.update({ ...progress }, live);
  };
  return { progress, report };
}

/** The longest time left worth stating: past it the pace says more about a stall than about the end. */
export const MAX_ETA_MS = 24 * 60 * 60_000;

/**
 * Time left at this run's pace (its records per elapsed ms), capped at MAX_ETA_MS, for what remains after `before`
 * (records a resumed walk received in earlier runs) and this run's. null when nothing says: no expected count,
 * nothing received yet in this run, or as many received as expected or more (how many more is anyone's guess). Pure.
 */
export function estimateRemainingMs(records: number, expected: number | null | undefined, elapsedMs: number, before = 0): number | null {
  if (expected === null || expected === undefined || !Number.isFinite(expected) || expected <= 0) return null;
  if (!(records > 0) || !(elapsedMs > 0) || before + records >= expected) return null;
  return Math.min(MAX_ETA_MS, Math.round(((expected - before - records) * elapsedMs) / records));
}

/** Runs read back to find a resource's previous incremental sync. */
const RECENT_RUNS = 100;

/**
 * What a walk should receive in all, from cheap reads of the warehouse: a walk of the whole list (a full or first
 * sync, a reconcile sweep, a backfill without `since`) the table's live rows; an incremental sync what the previous
 * successful one wrote, unless that was the whole table (a first sync is an incremental that walks the whole list).
 * The same for a resumed walk, whose earlier runs' records count towards it (`recordsBefore`). Unknown (undefined)
 * for a backfill window, and whenever a read fails: an estimate never fails a walk.
 */
export async function expectedRecords(
  warehouse: Pick<Warehouse, 'tableCounts' | 'recentRuns'>,
  resource: RecordResourceName,
  mode: RunMode,
  plan: { updatedAfter: string | null },
): Promise<number | undefined> {
  try {
    if (plan.updatedAfter !== null && mode !== 'incremental') return undefined;
    const rows = (await warehouse.tableCounts())[resourceDescriptor(resource).table] ?? 0;
    if (plan.updatedAfter === null) return rows > 0 ? rows : undefined;
    const succeeded = (run: RunRow) => run.outcome === 'succeeded' || run.outcome === 'succeeded_with_rejects';
    const runs = await warehouse.recentRuns(RECENT_RUNS);
    const previous = runs.find((run) => run.resource === resource && run.mode === 'incremental' && succeeded(run))?.records ?? 0;
    // One that wrote as many rows as the table holds walked the whole list (a first sync): no measure of an increment.
    return previous > 0 && previous < rows ? previous : undefined;
  } catch {
    return undefined;
  }
}
