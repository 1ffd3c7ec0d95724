/**
 * What the spec leaves open, drawn at random for a chaos trial: the simulator's unkind knobs (`unkindMix`: offset
 * cursors, lists newest first or by id, ties ordered anew by each page, a bulk change stamped alike, overlapping and
 * short pages, changes stamped in whole seconds, `updated_after` read to fewer digits, cursors bound to their key,
 * wrapped single views, a skewed `Date`, a small commit lag, replicas at different lags, faults); what the service
 * does while a sync walks (`changeWhileWalking`: records changed, some rendered broken, property definitions
 * changed, cursors expired); and what must hold once it goes quiet (`expectQuietTruth`). Shared by the
 * unkind-service and kill chaos tests.
 */
import { expect } from 'vitest';
import type { Config } from '../../src/config.js';
import { RECORD_RESOURCE_NAMES } from '../../src/core/resources.js';
import {
  DEFAULT_KEYS,
  RECORD_CORRUPTIONS,
  type ListPageEvent,
  type RecordResource,
  type SimulatorAdmin,
  type SimulatorOptions,
} from '../../src/simulator/index.js';
import { runReconcile, type ResourceResult, type SyncReport } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';
import { seededRandom } from './chaos-settings.js';

/** The organization every trial's service holds. */
const SIZE = { deals: 1200, companies: 250, contacts: 450, meetingLogs: 60, contactActivities: 200, users: 30 };
/** Short timeouts and backoff: a faulted request costs little. */
export const TRIAL_CONFIG: Partial<Config> = { retryBaseDelayMs: 20, retryLimit: 6, requestTimeoutMs: 3000 };

/**
 * Trial `trial` of seed `seed`: its mix, the stream the trial goes on drawing from, a line naming both for failures,
 * and its service, started with the mix (and `latencyMs` on every answer) with the bulk tie stamped.
 */
export async function startTrial(
  seed: number,
  trial: number,
  settings: { stampedOnly?: boolean; latencyMs?: number } = {},
): Promise<{ random: () => number; mix: UnkindMix; what: string; harness: Harness }> {
  const random = seededRandom(seed + trial);
  const mix = unkindMix(seed + trial, random, settings);
  const what = `CHAOS_SEED=${seed} trial ${trial} (${mix.label.join(', ')})`;
  const faults = settings.latencyMs === undefined ? mix.options.faults : { ...mix.options.faults, latencyMs: settings.latencyMs };
  const harness = await startHarness(
    { seed: Math.floor(seed / 10) + trial, size: SIZE, ...mix.options, ...(faults ? { faults } : {}) },
    mix.pooled ? { apiKey: POOL } : {},
  );
  if (mix.bulkTie > 0) bulkTie(harness, 100, mix.bulkTie);
  return { random, mix, what, harness };
}

/** Every change the simulator makes at random but summaries, which a later read picks up on its own schedule. */
export const CHANGES = ['update', 'same-value', 'create', 'activity', 'link', 'delete'] as const;
export type Change = (typeof CHANGES)[number];
/**
 * The changes an incremental sync is bound to see: each moves `updated_at` or none is needed. A link's change moves no
 * `updated_at`, and the spec has no deletion: a reconcile finds those.
 */
export const STAMPED_CHANGES: readonly Change[] = ['update', 'same-value', 'create', 'activity'];
/** The keys a pooled trial syncs with. */
export const POOL = [DEFAULT_KEYS.read, DEFAULT_KEYS.analyst, DEFAULT_KEYS.write].join(',');

export interface UnkindMix {
  options: SimulatorOptions;
  /** Deals stamped alike from the 100th on (`bulkTie`), or 0. */
  bulkTie: number;
  /** Whether the trial syncs with a pool of keys (cursors bound to their key need one). */
  pooled: boolean;
  /** What changes while the syncs walk: with `STAMPED_CHANGES` alone, a quiet sync must leave the exact truth. */
  changes: readonly Change[];
  /** Whether property definitions change too while the syncs walk (`changeDefinition`), and the stream they draw from. */
  definitions: (() => number) | null;
  /** Whether records deleted while the syncs walk come back now and then (`restoreRecord`), and the stream they draw from. */
  restores: (() => number) | null;
  label: string[];
}

/**
 * One trial's service: each unkind knob drawn on its own from `random`, which the trial goes on drawing from. Knobs
 * added since the first seeds were recorded draw from a stream of their own, so every seed named in the docs still
 * replays the mix it drew.
 */
export function unkindMix(seed: number, random: () => number, settings: { stampedOnly?: boolean } = {}): UnkindMix {
  const later = seededRandom(seed ^ 0x5bd1e995);
  const pick = <T>(choices: readonly T[]): T => choices[Math.floor(random() * choices.length)]!;
  const offset = random() < 0.7;
  const tiesOrderedByPage = offset && random() < 0.6;
  const options: SimulatorOptions = {
    cursorKind: offset ? 'offset' : 'keyset',
    tiesOrderedByPage,
    overlappingPages: pick([false, false, true, 'ties'] as const),
    wholeSecondStamps: random() < 0.4,
    maxPageSize: pick([200, 200, 100, 150]),
    ...(random() < 0.4 ? { updatedAfterDigits: pick([3, 0]) } : {}),
    cursorsBoundToKey: pick([false, false, true, 'forbidden'] as const),
    singleViewShape: pick(['record', 'data', 'results'] as const),
    rotatingSummaries: random() < 0.5,
    jsonLayout: pick(['compact', 'unkind'] as const),
    usersCursorKind: pick(['keyset', 'offset'] as const),
    clock: { dateSkewMs: pick([0, 0, -2500, 1500]) },
    commitLagMs: pick([0, 0, 150]),
    faults: { errorRate: 0.01, malformedRate: 0.01, seed: Math.floor(random() * 1e9) },
  };
  // The spec leaves a list's order open. Newest change first: a record changed during a walk moves to the front,
  // behind the cursor. By id: records keep their places when changed, new ones land anywhere, and a cursor on
  // `updated_at` alone (overlapping by ties) means nothing. Ties ordered anew are drawn for the oldest first only.
  const order = later();
  if (!tiesOrderedByPage && order < 0.45) {
    options.listOrder = order < 0.2 && options.overlappingPages !== 'ties' ? 'id' : 'updated_at_desc';
  }
  // Over pages that overlap and order ties anew, a tie that fills whole pages leaves open whether a page after one of
  // them began with a record of it again or with none: such a walk does not settle (docs/reliability.md). Where they
  // overlap by the tie, one larger than a page is left open alike; and so is a tie of 250 in pages of 100 or 150,
  // which a walk of the whole list meets (a quiet sync after a definition change lists every record again).
  const overlapOverTies = tiesOrderedByPage && options.overlappingPages !== false;
  const smallTie = options.overlappingPages === 'ties' || options.maxPageSize !== 200;
  const sizes = !overlapOverTies ? [250, 600, 1000] : smallTie ? [60] : [250];
  const bulkTie = offset && random() < 0.5 ? pick(sizes) : 0;
  const label = Object.entries(options)
    .filter(([name, value]) => name !== 'faults' && value !== false && !(name === 'clock' && options.clock?.dateSkewMs === 0))
    .map(([name, value]) => `${name}=${typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
  if (bulkTie > 0) label.push(`bulkTie=${bulkTie}`);
  const changes = later() < 0.5 || settings.stampedOnly ? STAMPED_CHANGES : CHANGES;
  if (changes === STAMPED_CHANGES) label.push('changes=stamped');
  const definitions = later() < 0.4 ? seededRandom(seed ^ 0x27d4eb2f) : null;
  if (definitions) label.push('definitions=changing');
  // The spec shows only deals' definitions listing and bounds none: the others' shape, and pages, are drawn.
  const listing = later();
  if (listing < 0.3) {
    options.definitionsListing = listing < 0.1 ? { shape: 'array' } : { pageSize: 5, shape: listing < 0.2 ? 'data' : 'results' };
    label.push(`definitionsListing=${JSON.stringify(options.definitionsListing)}`);
  }
  // A deleted record restored keeps the updated_at it had: only a reconcile sees it come back.
  const restoring = later() < 0.5 && changes.includes('delete');
  const restores = restoring ? seededRandom(seed ^ 0x1b873593) : null;
  if (restores) label.push('deletions=restored');
  // The spec promises no consistency between two reads: replicas a second apart at most serve them, one at random
  // for each request, so a page can show an older version than a page read before it.
  if (later() < 0.3) {
    options.commitLagMs = 1_000;
    options.readReplicas = 3;
    label.push('readReplicas=3 commitLagMs=1000');
  }
  return { options, bulkTie, pooled: options.cursorsBoundToKey !== false, changes, definitions, restores, label };
}

/** `n` deals from the `from`th in list order share one updated_at: a bulk change stamped alike. */
function bulkTie(h: Harness, from: number, n: number): void {
  const ordered = [...h.sim.admin.truth().records.deals].sort(
    (a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at) || (a.id < b.id ? -1 : 1),
  );
  const stamp = ordered[from + n - 1]!.updated_at;
  for (const record of ordered.slice(from, from + n - 1)) h.sim.admin.setUpdatedAt('deals', record.id, stamp);
}

/**
 * Fired from list pages while a sync walks: `budget` changes, a few at a time, then none; and now and then a record
 * rendered broken (repaired before the service goes quiet), every cursor given so far expired, or a page that leads
 * back to itself.
 */
export function changeWhileWalking(
  h: Harness,
  random: () => number,
  budget: number,
  options: {
    changes?: readonly Change[];
    /** Gets the ids of the records rendered with their id broken (`short_id`). */
    idBroken?: Set<string>;
    /** Where set, property definitions change too, drawn from this stream (`changeDefinition`). */
    definitions?: (() => number) | null;
    /** Where set, records deleted are restored now and then, drawn from this stream. */
    restores?: (() => number) | null;
    /** The trial's recycle bin: gets what the changes delete, and gives back what is restored. */
    deleted?: Deleted[];
  } = {},
): void {
  const changes = options.changes ?? CHANGES;
  let left = budget;
  let expired = false;
  const deleted = options.deleted ?? [];
  h.sim.admin.setOnListPage((event: ListPageEvent) => {
    const draw = random();
    if (draw < 0.02 && event.served.length > 0) {
      const record = event.served[Math.floor(random() * event.served.length)]!;
      const corruption = RECORD_CORRUPTIONS[Math.floor(random() * RECORD_CORRUPTIONS.length)]!;
      event.admin.corruptRecord(event.resource, record.id, corruption);
      if (corruption === 'short_id') options.idBroken?.add(record.id);
    } else if (draw < 0.03 && !expired) {
      expired = true;
      event.admin.expireCursors(random() < 0.5 ? 'invalid_request' : 'not_found');
    } else if (draw < 0.04) {
      event.admin.failNext(1, 'repeatPage', `/v1/${event.resource}/`);
    }
    if (options.definitions && options.definitions() < 0.08) changeDefinition(event.admin, event.resource, options.definitions);
    if (options.restores && deleted.length > 0 && options.restores() < 0.02) {
      const [back] = deleted.splice(Math.floor(options.restores() * deleted.length), 1);
      event.admin.restoreRecord(back!.resource, back!.id);
    }
    if (left <= 0 || random() > 0.2) return;
    const n = Math.min(left, 1 + Math.floor(random() * 3));
    left -= n;
    for (const report of event.admin.mutateRandom(n, Math.floor(random() * 1e9), [...changes])) {
      if (report.kind === 'delete') deleted.push({ resource: report.resource, id: report.id });
    }
  });
}

/** A record a trial's changes deleted. */
export interface Deleted {
  resource: RecordResource;
  id: string;
}

/**
 * Where the trial restores records: with the service quiet for a moment, a reconcile marks what the walks deleted,
 * then about half of it comes back with the `updated_at` it had, below every watermark, for the syncs after and the
 * last reconcile to mirror. Returns how many came back.
 */
export async function restoreAfterReconcile(
  h: Harness,
  restores: (() => number) | null,
  deleted: Deleted[],
  options: { what: string; config: Partial<Config> },
): Promise<number> {
  if (!restores) return 0;
  h.sim.admin.setOnListPage(null);
  const env = h.env(options.config);
  const reconciled = await runReconcile(env.deps, env.settings, { resources: RECORD_RESOURCE_NAMES, concurrency: 3 });
  expect(reconciled.ok, `${options.what}, reconcile before restoring:\n${failures(reconciled)}`).toBe(true);
  let restored = 0;
  for (const gone of deleted.splice(0)) {
    if (restores() < 0.5) continue;
    h.sim.admin.restoreRecord(gone.resource, gone.id);
    restored += 1;
  }
  return restored;
}

const NEW_PROPERTY_TYPES = ['text', 'number', 'date', 'boolean', 'select'] as const;

/**
 * One change of `resource`'s property definitions, as the organization's administrators make them (the spec says
 * clients read the definitions before writing, and no more): a property added and given to a few records, options
 * relabelled, a property renamed, its type changed, or removed. Only giving values moves an `updated_at`.
 */
export function changeDefinition(admin: SimulatorAdmin, resource: RecordResource, random: () => number): void {
  const pick = <T>(choices: readonly T[]): T => choices[Math.floor(random() * choices.length)]!;
  const truth = admin.truth();
  const custom = truth.properties[resource].filter((d) => !d.is_core);
  const draw = random();
  if (draw < 0.4 || custom.length === 0) {
    const type = pick(NEW_PROPERTY_TYPES);
    const apiName = Array.from({ length: 8 }, () => pick([...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'])).join('');
    const options =
      type === 'select'
        ? [
            { value: 'v1', label: 'One' },
            { value: 'v2', label: 'Two' },
          ]
        : [];
    admin.addProperty(resource, { api_name: apiName, display_name: `Added ${apiName}`, property_type: type, options });
    const value = { text: 'added', number: 42.5, date: '2025-03-04', boolean: true, select: 'v2' }[type];
    for (const record of truth.records[resource].slice(0, 1 + Math.floor(random() * 5))) {
      admin.updateRecord(resource, record.id, { [apiName]: value });
    }
    return;
  }
  const target = pick(custom);
  if (draw < 0.55 && target.property_type === 'select') {
    admin.updatePropertyOptions(
      resource,
      target.api_name,
      target.options.map((o) => ({ value: o.value, label: `${o.label} (new)` })),
    );
  } else if (draw < 0.7) admin.renameProperty(resource, target.api_name, `${target.display_name} (renamed)`);
  else if (draw < 0.85) admin.changePropertyType(resource, target.api_name, target.property_type === 'text' ? 'number' : 'text');
  else admin.removeProperty(resource, target.api_name);
}

const RECORD_RESOURCES: readonly RecordResource[] = ['deals', 'companies', 'contacts', 'meeting-logs', 'contact-activities'];

/**
 * Where the trial changes definitions, one more change after its last sync, as an administrator makes one between two
 * nightly runs: the next sync alone must mirror it (a type changed or a property removed moves no `updated_at`).
 */
export function changeDefinitionBetweenSyncs(h: Harness, definitions: (() => number) | null): void {
  if (!definitions) return;
  changeDefinition(h.sim.admin, RECORD_RESOURCES[Math.floor(definitions() * RECORD_RESOURCES.length)]!, definitions);
}

/**
 * The service gone quiet: no hook, no faults, every record rendered whole again, and past the commit lag and the
 * second of the last change.
 */
export async function goQuiet(h: Harness): Promise<void> {
  h.sim.admin.setOnListPage(null);
  h.sim.admin.clearFaults();
  for (const [resource, ids] of Object.entries(h.sim.admin.corrupted().records))
    for (const id of ids) h.sim.admin.repairRecord(resource as RecordResource, id);
  await new Promise((resolve) => setTimeout(resolve, 1_100));
}

/** The results of a run that did not succeed outright, one line each. */
export function failures(report: { results: readonly ResourceResult[] }): string {
  return report.results
    .filter((r) => r.outcome !== 'succeeded')
    .map((r) => `${r.resource}: ${r.outcome}: ${r.error?.code ?? ''} ${r.error?.message ?? ''}`)
    .join('\n');
}

/**
 * What a sync of a quiet service (`quiet`) must leave: every walk settled (a walk left unsettled holds its watermark
 * back for ever), and, where every change moved an `updated_at` (no relinks, no deletions), the exact truth by itself,
 * but for records whose id was the broken part (those name no single view: once fixed they wait for a reconcile) and
 * meeting logs' summaries (a log whose single view lagged its list row is written from the row, its summaries left to
 * the summaries job).
 * Then a reconcile settles every sweep (only a settled sweep marks deletions) and leaves the exact truth.
 */
export async function expectQuietTruth(
  h: Harness,
  quiet: SyncReport,
  options: { what: string; config: Partial<Config>; changes: readonly Change[]; idBroken: ReadonlySet<string> },
): Promise<void> {
  const { what } = options;
  expect(
    quiet.results.filter((r) => !r.settled).map((r) => r.resource),
    `${what}, quiet sync`,
  ).toEqual([]);
  const env = h.env(options.config);
  if (options.changes === STAMPED_CHANGES) {
    await expectMirrorsTruth(env.warehouse, h.sim, { exclude: [...options.idBroken], summaries: false }).catch((error: Error) => {
      throw new Error(`${what}, after the quiet sync: ${error.message}`);
    });
  }
  const reconciled = await runReconcile(env.deps, env.settings, { resources: RECORD_RESOURCE_NAMES, concurrency: 3 });
  expect(reconciled.ok, `${what}, reconcile:\n${failures(reconciled)}`).toBe(true);
  expect(
    reconciled.results.filter((r) => !r.settled).map((r) => r.resource),
    `${what}, reconcile`,
  ).toEqual([]);
  await expectMirrorsTruth(env.warehouse, h.sim).catch((error: Error) => {
    throw new Error(`${what}: ${error.message}`);
  });
}
