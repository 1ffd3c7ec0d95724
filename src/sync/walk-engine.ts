import type { RecordResourceName } from '../core/resources.js';
import { resourceDescriptor } from '../core/resources.js';
import { RateLimitWaitError, refusesCursor, SalesApiError } from '../api/index.js';
import type { SalesyncError } from '../core/errors.js';
import type { WalkCheckpoint, WalkMode } from '../core/types.js';
import type { BatchSource, ResourceState, SweepBatch } from '../warehouse/types.js';
import type { SyncSettings } from './context.js';
import { PassSignals, type PageOverlap } from './pass-signals.js';
import { PassUnion, UNION_PASS_FACTOR } from './pass-union.js';
import { TIE_PASS_FACTOR, tiePassPageSize, TiePasses } from './tie-passes.js';
import { expectedRecords } from './progress.js';
import type { RunContext } from './tracked-run.js';
import { refreshDefinitions, walkPages } from './walk-pages.js';
import { nextConfirmFrom, nextWatermark, passPageSize, type WalkPlan } from './window.js';

/** The few decisions that tell one kind of list walk from another; the engine does the rest. */
export interface WalkKind {
  /** Mode recorded in the checkpoint (a cursor resumes only a walk of the same mode and window). */
  mode: WalkMode;
  /** The `sync_state` row the walk checkpoints to. */
  stateKey: string;
  /** Where to start, from that row. */
  plan(state: ResourceState): WalkPlan;
  /** A clean last pass moves the resource's watermark (incremental and full syncs); others only complete their row. */
  movesWatermark: boolean;
  /** The last version observed is the truth (see `PageBatch.observedWins`). */
  observedWins: boolean;
  /** What the history versions the walk appends say wrote them (`PageBatch.source`). */
  source: BatchSource;
  /** Meeting logs: fetch every listed log's single view, not only new or moved ones. @defaultValue false */
  allDetails?: boolean;
  /** A reconcile sweep: its seen-id set (only changed rows written; every listed id recorded). */
  sweepKey?: string;
}

/**
 * Why a list request's cursor cannot be followed, if that is why it failed: the service may have refused a cursor it
 * no longer accepts (`refusesCursor`), or the only key it takes the cursor on must wait longer than the client waits
 * (`RateLimitWaitError.cursorBound`). Null for any other failure.
 */
function cursorUnusable(error: unknown): string | null {
  if (error instanceof SalesApiError && refusesCursor(error.status)) return 'was refused by the service (it may have expired)';
  if (error instanceof RateLimitWaitError && error.cursorBound) return 'is taken only on a key told to wait longer than salesync waits';
  return null;
}

/** What a batch's commit records of the pass it belongs to. */
interface PassEnding {
  /** The checkpoint's cursor: null once the pass is complete, or when its cursor may not be resumed. */
  cursor: string | null;
  dirty: boolean;
  maxUpdatedAt: string | null;
  /** The pass, with those before it, received every record of the window. */
  clean: boolean;
  /** The terms of the watermark a clean pass leaves (`nextWatermark`). */
  settledBy: { passStartedAt: string; maxUpdatedAt: string | null };
  /** Pages the window's pass was given (`nextConfirmFrom`). */
  pages: number;
}

/**
 * A batch of a pass over ties alone: never resumed from its cursor (asked for with another `updated_after` than the
 * walk's), and, once the passes together covered the ties, clean on the terms of the window's pass they stand on.
 */
function tiePassEnding(ties: TiePasses, covered: boolean): PassEnding {
  const { base } = ties;
  return {
    cursor: null,
    dirty: !covered,
    maxUpdatedAt: base.maxUpdatedAt,
    clean: covered,
    settledBy: { passStartedAt: base.passStartedAt, maxUpdatedAt: base.maxUpdatedAt },
    pages: base.pages,
  };
}

/** How the walk ended. */
export interface WalkEnd {
  /** The last pass saw nothing move under it. */
  settled: boolean;
  /** Server time (or local, see `localClock`) at which the walk's first pass started. */
  startedAt: string;
  localClock: boolean;
}

/**
 * Walk one resource's window into the warehouse, pass after pass: a pass that saw the list move under it (see
 * `PassSignals`) is followed by another over the same window, up to `settings.maxPasses`. Each pass is checkpointed
 * like any walk, with what it saw so far, so an interrupted pass resumes where it stood (see `PassSignals`).
 * Only a clean pass moves the watermark; when every pass saw changes, the watermark stays and the result says so.
 * On a quiet service this is one pass, exactly the requests of a plain walk.
 */
export async function walkWindow(run: RunContext, settings: SyncSettings, resource: RecordResourceName, kind: WalkKind): Promise<WalkEnd> {
  const { api, log, result, progress, report, deps, now } = run;
  const { warehouse, signal } = deps;
  // When the walk began, on the clock `_synced_at` is written by, less the lookback: a row written since with a newer
  // updated_at was observed after this walk's pages, or before them by a read that a replica behind (up to the
  // lookback) has not caught up with: the older version this walk may see must not replace it.
  const observedSince = new Date(Date.now() - settings.lookbackMs).toISOString();
  const { serverDate, properties } = await refreshDefinitions(api, warehouse, resource, report, signal);
  const state = await warehouse.readState(resource, kind.stateKey);
  const plan = kind.plan(state);
  const from = plan.resumedFrom;
  if (kind.movesWatermark) result.watermark = state.watermark;
  result.resumed = progress.resumed = plan.resumed;
  progress.recordsBefore = from?.received ?? 0;
  progress.expected = await expectedRecords(warehouse, resource, result.mode, plan);
  if (!plan.resumed && state.walk?.cursor) {
    log.info({ interruptedMode: state.walk.mode }, `starting a ${kind.mode} walk; the interrupted ${state.walk.mode} walk is abandoned`);
  }
  log.info(
    { mode: kind.mode, updatedAfter: plan.updatedAfter, resumed: plan.resumed },
    plan.resumed ? 'resuming walk from its checkpoint' : 'walk started',
  );

  // The walk's clock: the service's `Date`, or, when it sends none, ours, held further back (see nextWatermark).
  let localClock = from?.localClock ?? serverDate === null;
  const startedAt = from?.startedAt ?? serverDate ?? now().toISOString();
  if (localClock) log.warn('the service sends no Date header: the walk is timed by the local clock, and its watermark held back further');
  let lastServerDate = serverDate;
  const hasSummaries = resourceDescriptor(resource).hasSummaries;

  let pass = from?.pass ?? 1;
  // The limits count this run's passes. A pass resumed from an interrupted run began before whatever changed since,
  // so it is rarely clean: counted as the run's last, it left a quiet service's walk unsettled for a whole run.
  const firstPass = pass;
  let passStartedAt = from?.passStartedAt ?? startedAt;
  let after = plan.after;
  // The key `after` came on, as the checkpoint kept it: sent on it should the service bind cursors to keys.
  let afterKey = plan.resumedFrom?.cursorKey ?? null;
  let known: ReadonlyMap<string, string> = new Map();
  let overlapBefore: PageOverlap | null = null;
  // Logs whose single view the pass before missed (id → updated_at listed), and those this pass misses.
  let stillMissing: ReadonlyMap<string, string> = new Map();
  // Only the sweep's first batch starts its seen set afresh (ids of an abandoned sweep are forgotten).
  let freshSweep = !plan.resumed;
  // A record rejected by every pass is one record in quarantine.
  const rejected = new Set<string>();
  // The most records a page held with another after it: what the service serves, whatever a pass asks (passPageSize).
  let served: number | null = null;
  // The passes of this run over a list that stood still, taken together once one ended unclean (PassUnion).
  const together: { union: PassUnion | null } = { union: null };
  // A cursor refused in the middle of a pass walks the window again once a run; a second refusal fails it.
  let refusedMidPass = false;
  // Passes over ties alone, once a pass of the window showed that all it missed lies in them (TiePasses).
  let ties: TiePasses | null = null;
  for (;;) {
    const resuming = after !== null && from !== null;
    // A resumed pass has not every id; a local clock cannot tell whether the list stood still.
    if (resuming || localClock) together.union = null;
    const tie = ties ? { passes: ties, pass: ties.next() } : null;
    const signals: PassSignals = new PassSignals(
      passStartedAt,
      known,
      resuming ? { dirty: from.dirty === true, maxUpdatedAt: from.maxUpdatedAt ?? null } : null,
      overlapBefore,
      tie ? null : together.union,
    );
    result.passes = pass;
    let passClean = false;
    let tieVerdict: ReturnType<TiePasses['after']> | null = null;
    // Pages this pass has been given in this run (a pass resumed from its checkpoint stood past a page already).
    let passPages = 0;
    const missedNow = new Map<string, string>();
    const walked = walkPages({
      api,
      warehouse,
      resource,
      updatedAfter: tie ? tie.passes.from : plan.updatedAfter,
      pageSize: tie ? tiePassPageSize(tie.passes.passes, served) : passPageSize(pass, served),
      after,
      afterKey,
      ...(tie ? { endsAfter: () => tie.pass.pastRange } : {}),
      settings,
      signal,
      log,
      counters: result,
      progress,
      propertyColumns: properties,
      report,
      ...(kind.allDetails ? { allDetails: true } : {}),
      ...(deps.writerBacklog ? { writerBacklog: deps.writerBacklog } : {}),
      recordBuffer: () => warehouse.recordBuffer(resource, { observedWins: kind.observedWins }),
      onPage: (page) => {
        passPages += 1;
        if (page.nextCursor !== null) served = Math.max(served ?? 0, page.results.length + page.rejects.length);
        if (tie) {
          tie.pass.observe(page.results, page.nextCursor === null);
          if (page.rejects.length > 0 || page.cursorRepeated === true) tie.pass.spoil();
        } else {
          signals.observe(page.results, page.cursorRepeated === true, page.nextCursor === null);
          signals.observeRejects(page.rejects);
        }
        if (page.serverDate !== null) lastServerDate = page.serverDate;
        else if (!localClock) localClock = true;
      },
      onDetailMissing: (missing) => {
        signals.detailMissing();
        tie?.pass.spoil();
        for (const log of missing) missedNow.set(log.id, log.updated_at);
      },
      stillMissing,
      commit: (pages, cursor) => {
        // Read now, synchronously: the pass goes on while this batch waits for the writer.
        const passDone = cursor === null;
        let ending: PassEnding;
        if (tie) {
          if (passDone) tieVerdict = tie.passes.after(tie.pass);
          ending = tiePassEnding(tie.passes, tieVerdict === 'covered');
        } else {
          const seen = signals.snapshot();
          // A pass unclean only because ids came twice may, with the passes before it, have received every record.
          let verdict: ReturnType<PassUnion['after']> | null = null;
          if (passDone && seen.dirty !== null && !resuming && !localClock) {
            // The first unclean pass's own ids begin the union: a pass clean on its own never keeps a second set.
            together.union ??= new PassUnion(passStartedAt, signals.ids, signals.recent);
            verdict = together.union.after({
              ...signals.coverage(),
              newSinceStart: signals.receivedNewSinceStart,
              maxUpdatedAt: seen.maxUpdatedAt,
            });
          }
          const covered = verdict === 'covered' ? together.union : null;
          if (verdict === 'broken') together.union = null;
          ending = {
            cursor,
            dirty: seen.dirty !== null,
            maxUpdatedAt: seen.maxUpdatedAt,
            clean: passDone && (seen.dirty === null || covered !== null),
            settledBy: covered
              ? { passStartedAt: covered.startedAt, maxUpdatedAt: covered.maxUpdatedAt }
              : { passStartedAt, maxUpdatedAt: seen.maxUpdatedAt },
            pages: passPages + (resuming ? 1 : 0),
          };
        }
        const { clean } = ending;
        const checkpoint: WalkCheckpoint = {
          cursor: ending.cursor,
          cursorKey: ending.cursor === null ? null : (api.keyOfCursor(ending.cursor) ?? null),
          updatedAfter: plan.updatedAfter,
          startedAt,
          mode: kind.mode,
          pass,
          passStartedAt,
          dirty: ending.dirty,
          maxUpdatedAt: ending.maxUpdatedAt,
          localClock,
          // Read with the checkpoint: the records of every page up to its cursor, this run's and the runs' before it.
          received: progress.recordsBefore + result.records,
        };
        const watermark = kind.movesWatermark && clean ? nextWatermark(state.watermark, { ...ending.settledBy, localClock }) : undefined;
        const confirmFrom =
          watermark === undefined
            ? null
            : nextConfirmFrom({ updatedAfter: plan.updatedAfter, passPages: ending.pages, previous: state.watermark });
        let sweep: SweepBatch | undefined;
        if (kind.sweepKey !== undefined) {
          sweep = { key: kind.sweepKey, fresh: freshSweep };
          freshSweep = false;
        }
        const batch = warehouse.prepareBatch(resource, {
          records: pages.records,
          ...(hasSummaries ? { summaries: pages.summaries } : {}),
          ...(pages.summariesReadAt ? { summariesReadAt: pages.summariesReadAt } : {}),
          checkpoint,
          ...(watermark !== undefined ? { completeWatermark: watermark, confirmFrom } : {}),
          stateKey: kind.stateKey,
          ...(sweep ? { sweep } : {}),
          observedWins: kind.observedWins,
          ...(kind.observedWins ? { observedSince } : {}),
          ...(pages.rejects.length > 0 ? { rejects: pages.rejects } : {}),
          runId: run.runId,
          source: kind.source,
          // The service's clock, as its last answer gave it: a change `updated_at` does not date is dated by it.
          ...(lastServerDate !== null && !localClock ? { observedAt: lastServerDate } : {}),
          // A pass that saw nothing move has seen every record of its window: what it did not reject is no longer broken.
          ...(clean ? { settlesQuarantine: { since: plan.updatedAfter } } : {}),
        });
        const write = async () => {
          const committed = await warehouse.commitBatch(resource, batch);
          result.written += committed.written;
          result.changed += committed.changed;
          result.summariesChanged += committed.summariesChanged;
          for (const reject of pages.rejects) rejected.add(reject.id ?? reject.raw);
          result.rejected = rejected.size;
          progress.written = result.written;
          if (clean) passClean = true;
          if (watermark !== undefined) result.watermark = watermark;
        };
        return Object.assign(write, { discard: () => warehouse.discardBatch(batch) });
      },
    });
    try {
      await walked;
    } catch (error) {
      // The spec says nothing of how long a cursor lives, nor of keys: one refused as the checkpoint's first request
      // (it expired, a deploy changed its key), or bound to a key told to wait a day, would fail every run, and one
      // refused in the middle of a pass (a deploy while the walk ran) this run. The window is walked again from its
      // start instead (on the other keys): what the batches before wrote stays, and the watermark has not moved.
      const why = cursorUnusable(error);
      const checkpointRefused = resuming && passPages === 0;
      const midPass = passPages > 0 && !refusedMidPass;
      if (why === null || !(checkpointRefused || midPass)) throw error;
      log.warn(
        { code: (error as SalesyncError).code, pages: passPages },
        `${checkpointRefused ? "the checkpoint's cursor" : "the walk's cursor (in the middle of a pass)"} ${why}: walking the window again from its start`,
      );
      if (!checkpointRefused) refusedMidPass = true;
      after = afterKey = null;
      passStartedAt = lastServerDate ?? now().toISOString();
      // The pass cut short named only some of its window: no union to take it into.
      together.union = ties = null;
      continue;
    }
    const seen = signals.snapshot();
    result.settled = passClean;
    if (passClean) return { settled: true, startedAt, localClock };
    if (tie) {
      // Passes that can hold no more edge stamps whole leave the window to passes of its own again (a union anew).
      if (tieVerdict === 'broken' || (tie.passes.range.edges && !tie.passes.gaining)) ties = null;
    } else {
      const range = resuming || localClock ? null : signals.tieRange(tiePassPageSize(0, served));
      // The window's pass vouches for every record outside the range only if nothing changed while it walked.
      if (range !== null && !signals.receivedNewSinceStart) {
        ties = new TiePasses(range, { passStartedAt, maxUpdatedAt: seen.maxUpdatedAt, pages: passPages });
        // Passes over edges may hand the window back: its passes taken together then go on where they stood.
        if (!range.edges) together.union = null;
        log.info(
          { pass, from: range.from, to: range.to, ...(range.edges ? { edges: range.edges.size } : {}) },
          'the pass missed only records of ties split by its pages: listing the ties again alone',
        );
      }
    }
    // Passes that together name more of a still list's window (or of its ties) each time go on past the limit, to a bound.
    const passesThisRun = pass - firstPass + 1;
    const mending =
      (together.union?.gaining === true && passesThisRun < settings.maxPasses * UNION_PASS_FACTOR) ||
      (ties?.gaining === true && passesThisRun < settings.maxPasses * TIE_PASS_FACTOR);
    if (passesThisRun >= settings.maxPasses && !mending) {
      log.warn(
        { passes: pass, reason: tie ? 'ties_unnamed' : seen.dirty },
        `the list kept moving through ${pass} passes: the watermark stays where it was; the next run walks this window again`,
      );
      return { settled: false, startedAt, localClock };
    }
    if (!ties) log.info({ pass, reason: tie ? 'ties_moved' : seen.dirty }, 'the list moved under this pass: walking the window again');
    if (!tie) {
      known = signals.recent;
      overlapBefore = signals.pageOverlap();
    }
    stillMissing = missedNow;
    pass += 1;
    // The next pass starts now: the last answer's date is the latest server time known before its first request.
    passStartedAt = lastServerDate ?? now().toISOString();
    after = afterKey = null;
  }
}
