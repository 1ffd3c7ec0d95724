import { afterEach, describe, expect, it } from 'vitest';
import { RECORD_RESOURCE_NAMES, RESOURCE_NAMES, type RecordResourceName } from '../../src/core/resources.js';
import { SalesyncError } from '../../src/core/errors.js';
import {
  emptyResult,
  reconcileStateKey,
  runReconcile,
  type ReconcileReport,
  type ReconcileResult,
  type WalkGuard,
} from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';
import { abortingAfterPages } from '../support/wrap-api.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SMALL = { deals: 300, companies: 100, contacts: 300, meetingLogs: 60, contactActivities: 150, users: 12 };
/** What links and predictions touch: each test walks only the resources it needs (every walk opens the file). */
const LINKED: RecordResourceName[] = ['deals', 'companies', 'contacts'];

async function reconcile(
  h: Harness,
  options: { resources?: readonly (typeof RESOURCE_NAMES)[number][]; deep?: boolean } = {},
): Promise<ReconcileReport> {
  const env = h.env();
  return runReconcile(env.deps, env.settings, {
    resources: options.resources ?? RESOURCE_NAMES,
    deep: options.deep === true,
    concurrency: 3,
  });
}

function byResource(report: ReconcileReport): Record<string, ReconcileResult> {
  return Object.fromEntries(report.results.map((r) => [r.resource, r]));
}

/** Ids whose stored properties differ from the service's now: the drift a sweep must find. */
async function driftIds(h: Harness, resource: RecordResourceName): Promise<string[]> {
  const table = resource.replace('-', '_');
  const stored = await h.env().warehouse.query(`SELECT id, CAST(_properties AS VARCHAR) AS p FROM ${table} WHERE _deleted_at IS NULL`);
  const mirror = new Map(stored.map((r) => [String(r.id), JSON.parse(String(r.p)) as unknown]));
  return h.sim.admin
    .truth()
    .records[resource].filter((r) => mirror.has(r.id) && JSON.stringify(mirror.get(r.id)) !== JSON.stringify(r.properties))
    .map((r) => r.id);
}

describe('reconcile against the simulator', () => {
  it('a link change and a prediction batch are invisible to sync and fixed by reconcile, with the drift counted', async () => {
    harness = await startHarness({ seed: 21, size: SMALL });
    expect((await harness.sync({ resources: LINKED })).ok).toBe(true);
    const warehouse = harness.env().warehouse;
    const before = harness.sim.admin.truth();
    const contact = before.records.contacts[7]!;
    const company = before.records.companies.find((c) => c.id !== contact.properties['account_id'])!;
    harness.sim.admin.changeLink('contacts', contact.id, 'account_id', company.id);
    harness.sim.admin.runPredictionBatch();

    expect((await harness.sync({ resources: LINKED })).ok).toBe(true);
    await expect(expectMirrorsTruth(warehouse, harness.sim, { resources: LINKED })).rejects.toThrow();
    const drift = { deals: (await driftIds(harness, 'deals')).length, companies: (await driftIds(harness, 'companies')).length };
    const watermarks = await Promise.all(LINKED.map(async (r) => (await warehouse.readState(r)).watermark));

    const report = await reconcile(harness, { resources: LINKED });
    expect(report.ok).toBe(true);
    await expectMirrorsTruth(warehouse, harness.sim, { resources: LINKED });
    const results = byResource(report);
    expect(results.contacts?.changed).toBe(1);
    expect(results.deals?.changed).toBe(drift.deals);
    expect(results.companies?.changed).toBe(drift.companies);
    expect(results.deals?.changed).toBeGreaterThan(0);
    // Only changed rows are written; nothing vanished.
    for (const resource of LINKED) {
      expect(results[resource]?.written, resource).toBe(results[resource]?.changed);
      expect(results[resource]?.deleted, resource).toBe(0);
    }
    // Reconcile never moves the incremental watermark.
    expect(await Promise.all(LINKED.map(async (r) => (await warehouse.readState(r)).watermark))).toEqual(watermarks);
    const runs = await warehouse.query(`SELECT resource, changed, deleted FROM sync_runs WHERE mode = 'reconcile' ORDER BY resource`);
    expect(runs.find((r) => r.resource === 'contacts')).toMatchObject({ changed: 1, deleted: 0 });

    // A second sweep finds nothing: no drift, no writes.
    const again = await reconcile(harness, { resources: LINKED });
    expect(again.results.map((r) => [r.changed, r.deleted, r.written])).toEqual(LINKED.map(() => [0, 0, 0]));
  });

  it('marks exactly the deleted records with _deleted_at, and only after a complete sweep', async () => {
    harness = await startHarness({ seed: 22, size: SMALL });
    const swept: RecordResourceName[] = ['deals', 'contacts', 'meeting-logs'];
    expect((await harness.sync({ resources: swept })).ok).toBe(true);
    const warehouse = harness.env().warehouse;
    const truth = harness.sim.admin.truth();
    const gone: Record<string, string[]> = {
      deals: [truth.records.deals[3]!.id, truth.records.deals[250]!.id],
      contacts: [truth.records.contacts[10]!.id],
      'meeting-logs': [truth.records['meeting-logs'][5]!.id],
    };
    for (const [resource, ids] of Object.entries(gone))
      for (const id of ids) harness.sim.admin.deleteRecord(resource as RecordResourceName, id);

    expect((await harness.sync({ resources: swept })).ok).toBe(true);
    await expect(expectMirrorsTruth(warehouse, harness.sim, { resources: swept })).rejects.toThrow();
    const report = await reconcile(harness, { resources: swept });
    expect(report.ok).toBe(true);
    await expectMirrorsTruth(warehouse, harness.sim, { resources: swept });
    for (const resource of swept) {
      const table = resource.replace('-', '_');
      const marked = await warehouse.query(`SELECT id FROM ${table} WHERE _deleted_at IS NOT NULL ORDER BY id`);
      expect(
        marked.map((r) => r.id),
        resource,
      ).toEqual([...(gone[resource] ?? [])].sort());
      expect(byResource(report)[resource]?.deleted, resource).toBe(gone[resource]?.length ?? 0);
    }
    expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM reconcile_seen`)).toEqual([{ n: 0 }]);
  });

  it('an interrupted sweep marks nothing deleted; the resumed sweep lists the rest and marks correctly, then a fresh sweep checks the rows listed before', async () => {
    harness = await startHarness({ seed: 23, size: { ...SMALL, deals: 900 } }, { flushRows: 200 });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const truth = harness.sim.admin.truth();
    const deleted = [truth.records.deals[0]!.id, truth.records.deals[899]!.id];
    for (const id of deleted) harness.sim.admin.deleteRecord('deals', id);
    harness.sim.admin.runPredictionBatch();

    const controller = new AbortController();
    const env = harness.env({}, controller.signal);
    const makeApi = abortingAfterPages(env.deps.makeApi, controller, 2);
    const interrupted = await runReconcile({ ...env.deps, makeApi, signal: controller.signal }, env.settings, {
      resources: ['deals'],
      concurrency: 1,
    });
    expect(interrupted.results[0]).toMatchObject({ outcome: 'interrupted', deleted: 0, pages: 2 });
    const warehouse = env.warehouse;
    expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals WHERE _deleted_at IS NOT NULL`)).toEqual([{ n: 0 }]);
    expect((await warehouse.readState('deals', reconcileStateKey('deals'))).walk?.cursor).toBeTruthy();
    // The incremental walk's state is untouched by the sweep.
    expect((await warehouse.readState('deals')).walk).toBeNull();
    expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM reconcile_seen WHERE sweep_key = 'deals#reconcile'`)).toEqual([
      { n: 400 },
    ]);

    // Meanwhile a deal the interrupted sweep had listed is deleted, another relinked (no updated_at moves).
    const [listedBefore, relinked] = (await warehouse.query(`SELECT id FROM reconcile_seen ORDER BY id LIMIT 2`)).map((r) => String(r.id));
    harness.sim.admin.deleteRecord('deals', listedBefore!);
    harness.sim.admin.changeLink('deals', relinked!, 'account_id', truth.records.companies[3]!.id);
    deleted.push(listedBefore!);

    harness.sim.admin.resetStats();
    const resumed = await reconcile(harness, { resources: ['deals'] });
    expect(resumed.results[0]).toMatchObject({ outcome: 'succeeded', resumed: true, deleted: 3 });
    // 897 deals in 200-record pages: the 3 pages after the 2 committed before the interruption, then 5 afresh.
    expect(harness.sim.admin.stats().byRoute['GET /v1/deals/']).toBe(8);
    await expectMirrorsTruth(warehouse, harness.sim, { resources: ['deals'] });
    const marked = await warehouse.query(`SELECT id FROM deals WHERE _deleted_at IS NOT NULL ORDER BY id`);
    expect(marked.map((r) => r.id)).toEqual([...deleted].sort());
    const runs = await warehouse.query(`SELECT outcome, deleted FROM sync_runs WHERE mode = 'reconcile' ORDER BY started_at`);
    expect(runs).toEqual([
      { outcome: 'interrupted', deleted: 0 },
      { outcome: 'succeeded', deleted: 2 },
      { outcome: 'succeeded', deleted: 1 },
    ]);
  });

  it('acceptance: after every kind of change and a prediction batch, sync then reconcile --deep equals the truth', async () => {
    harness = await startHarness({ seed: 24, size: SMALL });
    expect((await harness.sync()).ok).toBe(true);
    const reports = harness.sim.admin.mutateRandom(400, 31);
    const kinds = new Set(reports.map((r) => r.kind));
    expect([...kinds].sort()).toEqual(['activity', 'create', 'delete', 'link', 'same-value', 'summaries', 'update']);
    harness.sim.admin.runPredictionBatch();

    expect((await harness.sync()).ok).toBe(true);
    const warehouse = harness.env().warehouse;
    await expect(expectMirrorsTruth(warehouse, harness.sim)).rejects.toThrow();
    const report = await reconcile(harness, { deep: true });
    expect(report.ok).toBe(true);
    await expectMirrorsTruth(warehouse, harness.sim);

    const results = byResource(report);
    const deletes = reports.filter((r) => r.kind === 'delete');
    for (const resource of RECORD_RESOURCE_NAMES) {
      // Deleted records created after the first sync were never mirrored: nothing to mark.
      const mirrored = await warehouse.query(
        `SELECT count(*)::INTEGER AS n FROM ${resource.replace('-', '_')} WHERE _deleted_at IS NOT NULL`,
      );
      expect(results[resource]?.deleted, resource).toBe(mirrored[0]?.n);
      expect(results[resource]?.deleted, resource).toBeLessThanOrEqual(deletes.filter((d) => d.resource === resource).length);
    }
    expect(results['meeting-logs']?.summariesChanged).toBeGreaterThan(0);
  });
});

describe('reconcile under a guard (the resource lease when Redis is shared)', () => {
  it('a sweep the guard skips walks nothing and reports skipped; one whose guard adds an error (a lost lease) reports that error', async () => {
    harness = await startHarness({ seed: 28, size: SMALL });
    const env = harness.env();
    const sweep = (guard: WalkGuard) => runReconcile(env.deps, env.settings, { resources: ['deals'], deep: false, concurrency: 1, guard });

    harness.sim.admin.resetStats();
    const skipping: WalkGuard = async (resource) => emptyResult(resource, 'reconcile', 'skipped');
    const skipped = await sweep(skipping);
    expect(skipped.results[0]).toMatchObject({ resource: 'deals', mode: 'reconcile', outcome: 'skipped', written: 0, deleted: 0 });
    expect(harness.sim.admin.stats().byRoute['GET /v1/deals/'] ?? 0).toBe(0);

    const lost = new SalesyncError('walk_lease_lost', 'lost the lease', { disposition: 'retriable' });
    // As walkLeaseGuard does: the lease's signal stops the walk, and the interrupted result gets the guard's error.
    const losing: WalkGuard = async (_resource, _mode, walk) => ({ ...(await walk(AbortSignal.abort())), error: lost });
    const failed = await sweep(losing);
    expect(failed.ok).toBe(false);
    expect(failed.results[0]).toMatchObject({ resource: 'deals', mode: 'reconcile', outcome: 'interrupted', error: lost });
  });
});
