// A service as unkind as the spec allows about time: Date headers that lie or are missing, updated_at moved
// backwards, late commits, and walks of one resource that overlap.
import { afterEach, describe, expect, it } from 'vitest';
import type { SalesApi } from '../../src/api/types.js';
import { RECORD_RESOURCE_NAMES, RESOURCES } from '../../src/core/resources.js';
import type { ListPageEvent } from '../../src/simulator/index.js';
import { runReconcile } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { FOUR_PAGES_OF_DEALS, startHarness, type Harness } from '../support/harness.js';
import { wrapApi } from '../support/wrap-api.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SIZE = FOUR_PAGES_OF_DEALS;
const DAY = 86_400_000;
const MINUTE = 60_000;

describe('walks that overlap (without Redis nothing keeps a sync and a reconcile of one resource apart)', () => {
  it("a sweep's page read before a change does not undo the change a sync committed meanwhile", async () => {
    // One page: the changed record cannot come back later in the sweep's own pass.
    harness = await startHarness({ seed: 69, size: { ...SIZE, deals: 30 } });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const env = harness.env();
    const changed = 'changed after the sweep read its page';
    let target: string | undefined;
    const makeApi = (): SalesApi => {
      const api = env.deps.makeApi();
      return wrapApi(api, {
        async *listPages(resource, options) {
          for await (const page of api.listPages(resource, options)) {
            if (resource === 'deals' && target === undefined) {
              // The record changes after the sweep read this page, and a sync commits the change before the sweep
              // has the page.
              target = page.results[0]!.id;
              harness!.sim.admin.updateRecord('deals', target, { name: changed });
              expect((await harness!.sync({ resources: ['deals'] })).ok).toBe(true);
            }
            yield page;
          }
        },
      });
    };
    const swept = await runReconcile({ ...env.deps, makeApi }, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(swept.results[0]).toMatchObject({ outcome: 'succeeded', changed: 0 });
    expect(await env.warehouse.query(`SELECT name FROM deals WHERE id = '${target}'`)).toEqual([{ name: changed }]);
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
  });
});

describe('clocks that lie', () => {
  it("a record stamped ahead of the service's Date header, then deleted, is marked by the next reconcile", async () => {
    harness = await startHarness({ seed: 67, size: SIZE, clock: { dateSkewMs: -60 * MINUTE } });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const [ahead, farAhead] = harness.sim.admin.truth().records.deals;
    harness.sim.admin.updateRecord('deals', ahead!.id, { name: 'stamped an hour ahead of the Date header' });
    harness.sim.admin.setUpdatedAt('deals', farAhead!.id, new Date(Date.now() + DAY).toISOString());
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    harness.sim.admin.deleteRecord('deals', ahead!.id);
    harness.sim.admin.deleteRecord('deals', farAhead!.id);
    const env = harness.env();
    const report = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 2 });
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
  });

  it('a Date header a day ahead on one run loses no change made after it', async () => {
    harness = await startHarness({ seed: 46, size: SIZE, clock: { dateSkewMs: DAY } });
    expect((await harness.sync()).ok).toBe(true);
    harness.sim.admin.setClock({ dateSkewMs: 0 });
    harness.sim.admin.mutateRandom(120, 3, ['update', 'create', 'activity']);
    expect((await harness.sync()).ok).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim);
  });

  it('a Date header a day ahead on every run loses no change', async () => {
    harness = await startHarness({ seed: 47, size: SIZE, clock: { dateSkewMs: DAY } });
    expect((await harness.sync()).ok).toBe(true);
    for (const seed of [4, 5]) {
      harness.sim.admin.mutateRandom(80, seed, ['update', 'create', 'activity']);
      expect((await harness.sync()).ok).toBe(true);
      await expectMirrorsTruth(harness.env().warehouse, harness.sim);
    }
  });

  it('a Date header a day ahead over a list ordered by id: a change behind the cursor, then one ahead of it, is written by the next incremental sync', async () => {
    // The change ahead is received and bounds the watermark (the Date header, a day ahead, cannot); the one behind,
    // made earlier than the lookback before it, is never listed by that walk, and nothing the walk saw was dated
    // after its start.
    let clock = Date.parse('2026-06-01T00:00:00Z');
    harness = await startHarness({ seed: 71, size: SIZE, listOrder: 'id', clock: { dateSkewMs: DAY }, now: () => clock });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    clock += 60 * MINUTE;
    const ids = harness.sim.admin
      .truth()
      .records.deals.map((r) => r.id)
      .sort();
    for (const id of ids.slice(0, 300)) harness.sim.admin.updateRecord('deals', id, { name: `renamed ${id}` });
    clock += 10 * MINUTE;
    let fired = false;
    harness.sim.admin.setOnListPage((event: ListPageEvent) => {
      if (event.resource !== 'deals' || fired) return;
      fired = true;
      event.admin.updateRecord('deals', event.served[0]!.id, { name: 'behind the cursor' });
      clock += 10 * MINUTE;
      event.admin.updateRecord('deals', ids[299]!, { name: 'ahead of the cursor' });
      clock += 10 * MINUTE;
    });
    expect((await harness.sync({ resources: ['deals'] })).results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 1 });
    expect(fired).toBe(true);
    harness.sim.admin.setOnListPage(null);
    clock += 60 * MINUTE;
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });

  it('a service that sends no Date header syncs on the local clock, with a watermark held back', async () => {
    harness = await startHarness({ seed: 48, size: SIZE, clock: { omitDate: true } });
    const first = await harness.sync();
    expect(first.ok).toBe(true);
    harness.sim.admin.mutateRandom(80, 6, ['update', 'create', 'activity']);
    expect((await harness.sync()).ok).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim);
  });

  it('a record whose updated_at moved backwards is written by the next full walk, and by a reconcile, once its row is older than the lookback', async () => {
    // Within the lookback a newer stored row may be what a replica behind has not caught up with (see below).
    harness = await startHarness({ seed: 49, size: SIZE }, { lookbackMs: 500 });
    expect((await harness.sync({ resources: ['deals', 'companies'] })).ok).toBe(true);
    const [deal] = harness.sim.admin.truth().records.deals;
    const [company] = harness.sim.admin.truth().records.companies;
    harness.sim.admin.setUpdatedAt('deals', deal!.id, '2020-01-01T00:00:00.000001Z');
    harness.sim.admin.setUpdatedAt('companies', company!.id, '2020-01-01T00:00:00.000001Z');
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await harness.sync({ resources: ['deals'], mode: 'full' })).ok).toBe(true);
    const env = harness.env();
    expect((await runReconcile(env.deps, env.settings, { resources: ['companies'], concurrency: 1 })).ok).toBe(true);
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals', 'companies'] });
  });
});

describe('the watermark rule', () => {
  it('is the smaller of the pass start on the service clock and the largest updated_at received: a change committed late is caught', async () => {
    // A Date header 30 minutes behind the records' clock, and one change that becomes visible 10 minutes after its
    // updated_at (a long transaction): a watermark at the largest updated_at seen, or on the local clock, skips it.
    let clock = Date.UTC(2026, 0, 10, 12);
    harness = await startHarness({ seed: 51, size: SIZE, now: () => clock, clock: { dateSkewMs: -30 * 60_000 } });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const [late, seen] = harness.sim.admin.truth().records.deals;
    clock += 60_000;
    harness.sim.admin.setCommitLag(10 * 60_000);
    harness.sim.admin.updateRecord('deals', late!.id, { name: 'committed late' });
    harness.sim.admin.setCommitLag(0);
    clock += 6 * 60_000;
    harness.sim.admin.updateRecord('deals', seen!.id, { name: 'committed at once' });
    clock += 60_000;
    expect((await harness.sync({ resources: ['deals'] })).results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    clock += 5 * 60_000;
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });
});

describe('reads served by replicas at different lags (the spec promises no consistency between two reads)', () => {
  it(
    'a change one page showed and the next page did not is written once the replicas catch up; a reconcile reading behind a sync regresses no row',
    { timeout: 120_000 },
    async () => {
      // Three replicas, the last a minute behind, each request served by one at random: a page can show an older
      // version than the page before it, so a pass can step over a changed record with no sign, and a reconcile's
      // sweep can list a version older than the one a sync just wrote. The lookback (5 minutes) spans the lag.
      let clock = Date.UTC(2026, 0, 10, 12);
      harness = await startHarness({ seed: 52, size: { ...SIZE, deals: 300 }, now: () => clock, commitLagMs: MINUTE, readReplicas: 3 });
      expect((await harness.sync()).ok).toBe(true);
      const env = harness.env();
      const stamps = async () => {
        const tables = RESOURCES.filter((r) => r.shape === 'record').map((r) => `SELECT id, epoch_us(updated_at) AS u FROM ${r.table}`);
        return new Map((await env.warehouse.query(tables.join(' UNION ALL '))).map((r) => [String(r.id), Number(r.u)]));
      };
      for (const seed of [11, 12, 13]) {
        clock += 15_000;
        harness.sim.admin.mutateRandom(60, seed, ['update', 'create', 'activity', 'delete']);
        clock += 15_000;
        const rep = await harness.sync();
        if (!rep.ok)
          console.log(
            'FAILED',
            JSON.stringify(rep.results.filter((r) => r.outcome !== 'succeeded')),
            (rep as { snapshotError?: Error }).snapshotError?.message,
          );
        expect(rep.ok).toBe(true);
        if (seed !== 12) continue;
        const before = await stamps();
        expect(
          (await runReconcile(env.deps, env.settings, { resources: [...RECORD_RESOURCE_NAMES], concurrency: 1, force: true })).ok,
        ).toBe(true);
        const regressed = [...(await stamps())].filter(([id, u]) => u < (before.get(id) ?? u));
        expect(regressed, 'rows the reconcile wrote back to an older version').toEqual([]);
      }
      clock += MINUTE + 1; // every replica has every change
      expect((await harness.sync()).ok).toBe(true);
      expect((await runReconcile(env.deps, env.settings, { resources: [...RECORD_RESOURCE_NAMES], concurrency: 1 })).ok).toBe(true);
      await expectMirrorsTruth(env.warehouse, harness.sim);
    },
  );

  it("a reconcile's confirming GET answered by a replica behind the sync before it does not write the older version", async () => {
    // 601 deals in pages of 200: the one changed last is alone on the fourth page. A record deleted behind the sweep's
    // offset cursor as it reads the third makes it step over that one, which it then asks for by its single view,
    // served by the replica a minute behind: the version before the change a sync wrote a second earlier.
    let clock = Date.UTC(2026, 0, 10, 12);
    harness = await startHarness({ seed: 54, size: { ...SIZE, deals: 601 }, now: () => clock, cursorKind: 'offset', commitLagMs: MINUTE });
    harness.sim.admin.setReadReplicas(3, 0);
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const deal = harness.sim.admin.truth().records.deals[0]!;
    clock += 1_000;
    const changed = harness.sim.admin.updateRecord('deals', deal.id, { name: 'read by the replica up to date' });
    clock += 1_000;
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    let pages = 0;
    let deleted: string | undefined;
    harness.sim.admin.setOnListPage((event: ListPageEvent) => {
      if (event.resource !== 'deals' || ++pages !== 3) return;
      deleted = event.served[0]!.id;
      event.admin.deleteRecord('deals', deleted);
      event.admin.setReadReplicas(3, 2);
    });
    const env = harness.env();
    const swept = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(swept.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 0, changed: 0 });
    expect(harness.sim.admin.stats().byRoute['GET /v1/deals/{id}/']).toBeGreaterThanOrEqual(1);
    const [row] = await env.warehouse.query(`SELECT _properties->>'name' AS name FROM deals WHERE id = '${deal.id}'`);
    expect(row).toEqual({ name: changed.properties['name'] });
    harness.sim.admin.setOnListPage(null);
    clock += MINUTE + 1;
    expect((await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 })).ok).toBe(true);
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
    expect(deleted).toBeDefined();
  });
});

describe('resources other than deals walk the same engine', () => {
  it('every record resource under offset cursors and a skewed clock ends equal to the truth', async () => {
    harness = await startHarness({ seed: 50, size: SIZE, cursorKind: 'offset', clock: { dateSkewMs: -DAY / 24 } });
    expect((await harness.sync()).ok).toBe(true);
    harness.sim.admin.mutateRandom(150, 8, ['update', 'create', 'activity', 'same-value']);
    const report = await harness.sync();
    expect(report.ok).toBe(true);
    for (const resource of RECORD_RESOURCE_NAMES) expect(report.results.find((r) => r.resource === resource)?.settled).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim);
  });
});
