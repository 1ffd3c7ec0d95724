// A service as unkind as the spec allows in how it lists: offset cursors over moving lists, pages that overlap,
// cursors refused mid-walk or bound to a key, changes stamped in whole seconds (ties: unkind-ties.test.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_KEYS, type ListPageEvent } from '../../src/simulator/index.js';
import { RECORD_RESOURCE_NAMES } from '../../src/core/resources.js';
import { reconcileStateKey, runReconcile, runSync } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { FOUR_PAGES_OF_DEALS, startHarness, type Harness } from '../support/harness.js';
import { abortingAfterPages } from '../support/wrap-api.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SIZE = FOUR_PAGES_OF_DEALS;
const MINUTE = 60_000;

/**
 * Fires `count` changes from a list page of deals: each updates a record the walk has already been given, which in
 * an `updated_at`-ordered list moves it to the end, so under offset cursors the unchanged records after it shift
 * one place back and the walk steps over one of them. Fires on the first `pages` pages it sees, then stops, so the
 * service goes quiet.
 */
function moveRecordsBehindTheCursor(sim: Harness['sim'], count: number, pages = 2): () => number {
  let fired = 0;
  let seenPages = 0;
  sim.admin.setOnListPage((event: ListPageEvent) => {
    if (event.resource !== 'deals' || seenPages >= pages) return;
    seenPages += 1;
    for (const record of event.served.slice(0, count)) {
      event.admin.updateRecord('deals', record.id, { amount: 1_000_000 + fired });
      fired += 1;
    }
  });
  return () => fired;
}

/**
 * Deletes the first record served on the first list page of deals the walk is given (once): under offset cursors
 * the records after it shift one place back and the walk steps over the one the next page would have begun with.
 * A deletion changes no record the walk sees, so no pass signal can tell. Returns the deleted id, once fired.
 */
function deleteBehindTheCursor(sim: Harness['sim']): () => string | undefined {
  let deleted: string | undefined;
  sim.admin.setOnListPage((event: ListPageEvent) => {
    if (event.resource !== 'deals' || deleted !== undefined) return;
    deleted = event.served[0]!.id;
    event.admin.deleteRecord('deals', deleted);
  });
  return () => deleted;
}

describe('offset cursors over a list ordered by updated_at (the spec fixes neither order nor cursor)', () => {
  it('changes fired during a first full sync leave the warehouse equal to the truth after that sync, with no reconcile', async () => {
    harness = await startHarness({ seed: 41, size: SIZE, cursorKind: 'offset', listOrder: 'updated_at' });
    const fired = moveRecordsBehindTheCursor(harness.sim, 5);
    const report = await harness.sync({ resources: ['deals'] });
    expect(fired()).toBe(10);
    expect(report.ok).toBe(true);
    const deals = report.results[0]!;
    // The first pass saw the list move and was walked again; the second was clean and moved the watermark.
    expect(deals).toMatchObject({ outcome: 'succeeded', settled: true });
    expect(deals.passes).toBeGreaterThanOrEqual(2);
    expect(deals.watermark).not.toBeNull();
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });

  it('changes fired during a first full sync whose every batch spills to its stage file leave the warehouse equal to the truth', async () => {
    // Every sealed chunk goes to the file: the earlier versions of the records moved are dropped from it.
    harness = await startHarness({ seed: 41, size: SIZE, cursorKind: 'offset', listOrder: 'updated_at' }, {}, { batchSpillBytes: 1 });
    const fired = moveRecordsBehindTheCursor(harness.sim, 5);
    const report = await harness.sync({ resources: ['deals'] });
    expect(fired()).toBe(10);
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });

  it('changes fired during an incremental sync leave the warehouse equal to the truth after that sync', async () => {
    harness = await startHarness({ seed: 42, size: SIZE, cursorKind: 'offset', listOrder: 'updated_at' });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    // A window of three pages of changed deals, and more changes while the incremental walk is under way.
    const truth = harness.sim.admin.truth().records.deals;
    for (const record of truth.slice(0, 450)) harness.sim.admin.updateRecord('deals', record.id, { name: `renamed ${record.id}` });
    const fired = moveRecordsBehindTheCursor(harness.sim, 4);
    const report = await harness.sync({ resources: ['deals'] });
    expect(fired()).toBe(8);
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    expect(report.results[0]!.passes).toBeGreaterThanOrEqual(2);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });

  it('a list that keeps moving through every pass leaves the watermark where it was and says so; the next quiet run settles it', async () => {
    harness = await startHarness({ seed: 43, size: SIZE, cursorKind: 'offset', listOrder: 'updated_at' }, { maxPasses: 2 });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const before = (await harness.env().warehouse.readState('deals')).watermark;
    const truth = harness.sim.admin.truth().records.deals;
    for (const record of truth.slice(0, 300)) harness.sim.admin.updateRecord('deals', record.id, { name: `again ${record.id}` });
    moveRecordsBehindTheCursor(harness.sim, 3, 10);
    const moving = await harness.sync({ resources: ['deals'] });
    expect(moving.results[0]).toMatchObject({ outcome: 'succeeded', settled: false, passes: 2 });
    expect((await harness.env().warehouse.readState('deals')).watermark).toBe(before);
    const runs = await harness
      .env()
      .warehouse.query(`SELECT passes, settled FROM sync_runs WHERE resource = 'deals' ORDER BY started_at DESC LIMIT 1`);
    expect(runs[0]).toEqual({ passes: 2, settled: false });

    harness.sim.admin.setOnListPage(null);
    const quiet = await harness.sync({ resources: ['deals'] });
    expect(quiet.results[0]).toMatchObject({ settled: true, passes: 1 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });

  it('a walk interrupted in its last pass and resumed after records changed takes the passes it needs in the run that resumes it, and settles', async () => {
    harness = await startHarness({ seed: 47, size: SIZE, cursorKind: 'offset', listOrder: 'updated_at' }, { maxPasses: 2, flushRows: 200 });
    const h = harness;
    // The first pass sees the list move (pages 1–4), the second is stopped after two of its pages, past a commit.
    moveRecordsBehindTheCursor(h.sim, 3, 1);
    const controller = new AbortController();
    const env = h.env({}, controller.signal);
    const makeApi = abortingAfterPages(env.deps.makeApi, controller, 6);
    const stopped = await runSync({ ...env.deps, makeApi, signal: controller.signal }, env.settings, {
      resources: ['deals'],
      mode: 'incremental',
      concurrency: 1,
    });
    expect(stopped.results[0]).toMatchObject({ outcome: 'interrupted', passes: 2 });
    expect((await h.env().warehouse.readState('deals')).walk).toMatchObject({ pass: 2 });

    // Records change past the second the interrupted pass began in (a `Date` header has whole seconds): the resumed
    // pass receives them stamped after its start, so it cannot be clean. Then the service is quiet.
    h.sim.admin.setOnListPage(null);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    for (const record of h.sim.admin.truth().records.deals.slice(0, 5)) h.sim.admin.updateRecord('deals', record.id, { amount: 7 });
    const resumed = await h.sync({ resources: ['deals'] });
    expect(resumed.results[0]).toMatchObject({ outcome: 'succeeded', resumed: true, settled: true, passes: 3 });
    expect((await h.env().warehouse.readState('deals')).watermark).not.toBeNull();
    await expectMirrorsTruth(h.env().warehouse, h.sim, { resources: ['deals'] });
  });

  it('a reconcile run while records change marks no live record deleted, and marks exactly the deleted ones', async () => {
    harness = await startHarness({ seed: 44, size: SIZE, cursorKind: 'offset', listOrder: 'updated_at' });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const gone = harness.sim.admin
      .truth()
      .records.deals.slice(300, 303)
      .map((r) => r.id);
    for (const id of gone) harness.sim.admin.deleteRecord('deals', id);
    moveRecordsBehindTheCursor(harness.sim, 5, 1);
    harness.sim.admin.resetStats();
    const env = harness.env();
    const report = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 3 });
    const marked = await env.warehouse.query(`SELECT id FROM deals WHERE _deleted_at IS NOT NULL ORDER BY id`);
    expect(marked.map((r) => r.id)).toEqual([...gone].sort());
    // Each deletion was confirmed by one GET of the record: the service, not the sweep, says it is gone.
    expect(harness.sim.admin.stats().byRoute['GET /v1/deals/{id}/']).toBeGreaterThanOrEqual(3);
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
    expect((await env.warehouse.readState('deals', reconcileStateKey('deals'))).walk).toBeNull();
  });

  it("a record deleted behind a reconcile sweep's offset cursor marks no live record deleted: the record stepped over is confirmed by a GET and kept", async () => {
    harness = await startHarness({ seed: 53, size: SIZE, cursorKind: 'offset', listOrder: 'updated_at' });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const deleted = deleteBehindTheCursor(harness.sim);
    harness.sim.admin.resetStats();
    const env = harness.env();
    const swept = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(deleted()).toBeDefined();
    // The deleted record was listed before it went, so this sweep keeps it; the one stepped over was not listed.
    expect(swept.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 0 });
    expect(harness.sim.admin.stats().byRoute['GET /v1/deals/{id}/']).toBeGreaterThanOrEqual(1);
    expect(await env.warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals WHERE _deleted_at IS NOT NULL`)).toEqual([{ n: 0 }]);
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'], exclude: [deleted()!] });

    harness.sim.admin.setOnListPage(null);
    const quiet = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(quiet.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 1 });
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
  });

  it.each(['updated_at', 'updated_at_desc'] as const)(
    'a change an incremental walk stepped over when a record was deleted behind its offset cursor is written by the next incremental sync (list order %s)',
    async (listOrder) => {
      // The service's clock, moved by hand: changes spread over far more than the lookback, so only a walk that lists
      // the window again can see the record stepped over.
      let clock = Date.parse('2026-06-01T00:00:00Z');
      harness = await startHarness({ seed: 54, size: SIZE, cursorKind: 'offset', listOrder, now: () => clock });
      expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
      clock += 60 * MINUTE;
      for (const record of harness.sim.admin.truth().records.deals.slice(0, 450)) {
        clock += 10_000;
        harness.sim.admin.updateRecord('deals', record.id, { name: `renamed ${record.id}` });
      }
      clock += 10 * MINUTE;
      const deleted = deleteBehindTheCursor(harness.sim);
      // Nothing the walk saw changed: its one pass is clean.
      expect((await harness.sync({ resources: ['deals'] })).results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 1 });
      expect(deleted()).toBeDefined();
      harness.sim.admin.setOnListPage(null);
      clock += 60 * MINUTE;
      const next = await harness.sync({ resources: ['deals'] });
      expect(next.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
      await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'], exclude: [deleted()!] });
      // That walk's window was one page: the one after it starts from the watermark again.
      harness.sim.admin.resetStats();
      expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
      expect(harness.sim.admin.stats().byRoute['GET /v1/deals/']).toBe(1);
      const env = harness.env();
      const report = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
      expect(report.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 1, changed: 0 });
      await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
    },
  );

  it("a 404 without the service's error envelope (a proxy answering) marks nothing deleted: the reconcile fails and says so", async () => {
    harness = await startHarness({ seed: 57, size: SIZE });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const [gone] = harness.sim.admin.truth().records.deals;
    harness.sim.admin.deleteRecord('deals', gone!.id);
    harness.sim.admin.failNext(1, 'gateway404', `/v1/deals/${gone!.id}/`);
    const env = harness.env();
    const refused = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(refused.results[0]).toMatchObject({ outcome: 'failed', error: { code: 'http_404' } });
    expect(refused.results[0]!.error?.message).toMatch(/SALES_API_BASE_URL/);
    expect(await env.warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals WHERE _deleted_at IS NOT NULL`)).toEqual([{ n: 0 }]);
    // The service itself says not_found: then it is marked.
    const confirmed = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(confirmed.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 1 });
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
  });

  it('a page served twice (the service gave a cursor it had given before) makes the pass unclean, not the sync fail', async () => {
    harness = await startHarness({ seed: 52, size: SIZE, cursorKind: 'offset' });
    harness.sim.admin.failNext(1, 'repeatPage', '/v1/deals/');
    const report = await harness.sync({ resources: ['deals'] });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 2 });
    expect(harness.sim.admin.stats().faults.repeatPage).toBe(1);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });

  it('a reconcile marks a deletion in a table of nine, though one row is more than its share', async () => {
    harness = await startHarness({ seed: 66, size: { ...SIZE, companies: 9 } });
    expect((await harness.sync({ resources: ['companies'] })).ok).toBe(true);
    harness.sim.admin.deleteRecord('companies', harness.sim.admin.truth().records.companies[4]!.id);
    const env = harness.env();
    const report = await runReconcile(env.deps, env.settings, { resources: ['companies'], concurrency: 1 });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 1 });
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['companies'] });
  });

  it('a reconcile that would mark more than its share of a table deleted marks nothing and asks for --force', async () => {
    harness = await startHarness({ seed: 45, size: SIZE }, { deleteShare: 0.1 });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    for (const record of harness.sim.admin.truth().records.deals.slice(0, 100)) harness.sim.admin.deleteRecord('deals', record.id);
    const env = harness.env();
    const refused = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(refused.results[0]!.error?.code).toBe('reconcile_too_many_missing');
    expect(refused.results[0]!.error?.message).toMatch(/--force/);
    expect(await env.warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals WHERE _deleted_at IS NOT NULL`)).toEqual([{ n: 0 }]);
    const forced = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1, force: true });
    expect(forced.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 100 });
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
  });
});

describe('a deleted record restored (the spec says nothing of deletion, nor of a record coming back)', () => {
  it('a deal and a meeting log restored with the updated_at they had, long below the watermark, are live again after the next reconcile', async () => {
    harness = await startHarness({ seed: 91, size: SIZE });
    const env = harness.env();
    const resources = ['deals', 'meeting-logs'] as const;
    const reconcile = () => runReconcile(env.deps, env.settings, { resources: [...resources], concurrency: 1 });
    expect((await harness.sync({ resources: [...resources] })).ok).toBe(true);
    const truth = harness.sim.admin.truth().records;
    const gone = { deals: truth.deals[3]!.id, 'meeting-logs': truth['meeting-logs'][5]!.id };
    for (const resource of resources) harness.sim.admin.deleteRecord(resource, gone[resource]);
    expect((await reconcile()).results.map((r) => r.deleted)).toEqual([1, 1]);
    for (const resource of resources) harness.sim.admin.restoreRecord(resource, gone[resource]);
    harness.sim.admin.mutateRandom(10, 5, ['update', 'create']);
    expect((await harness.sync({ resources: [...resources] })).ok).toBe(true);
    expect((await reconcile()).ok).toBe(true);
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: [...resources] });
    const live = await env.warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals WHERE id = '${gone.deals}' AND _deleted_at IS NULL`);
    expect(live).toEqual([{ n: 1 }]);
  });
});

describe('a list that gives the newest change first (the spec fixes no order)', () => {
  it.each(['keyset', 'offset'] as const)(
    'records changed during a sync move to the front, behind the cursor: a quiet sync after it writes them, every walk settled, and a reconcile marks a deletion (%s cursors)',
    async (cursorKind) => {
      harness = await startHarness({ seed: 45, size: SIZE, cursorKind, listOrder: 'updated_at_desc' });
      const fired = moveRecordsBehindTheCursor(harness.sim, 5);
      const first = await harness.sync({ resources: ['deals'] });
      expect(fired()).toBe(10);
      expect(first.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
      harness.sim.admin.mutateRandom(30, 45, ['update', 'create']);
      moveRecordsBehindTheCursor(harness.sim, 3);
      expect((await harness.sync({ resources: ['deals'] })).results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
      harness.sim.admin.setOnListPage(null);
      const gone = harness.sim.admin.truth().records.deals[200]!.id;
      harness.sim.admin.deleteRecord('deals', gone);
      expect((await harness.sync({ resources: ['deals'] })).results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
      const env = harness.env();
      const report = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
      expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, deleted: 1 });
      await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
    },
  );
});

describe('cursors that stop being accepted in the middle of a walk (the spec says nothing of how long one lives)', () => {
  it.each(['invalid_request', 'not_found'] as const)(
    'a deploy that expires every cursor while a walk runs (%s): the window is walked again in the same run, equal to the truth',
    async (answer) => {
      harness = await startHarness({ seed: 61, size: SIZE });
      let expired = false;
      harness.sim.admin.setOnListPage((event: ListPageEvent) => {
        if (event.resource !== 'deals' || event.pageNumber !== 2 || expired) return;
        expired = true;
        event.admin.expireCursors(answer);
      });
      const report = await harness.sync({ resources: ['deals'] });
      expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
      // The two pages before the deploy, the refused third, then the whole window again.
      const stats = harness.sim.admin.stats();
      expect(stats.byStatus[answer === 'not_found' ? '404' : '400']).toBe(1);
      expect(stats.byRoute['GET /v1/deals/']).toBe(2 + 1 + 4);
      await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
    },
  );

  it('cursors expired twice in one run fail the walk with the refusal; the next run resumes and ends equal to the truth', async () => {
    harness = await startHarness({ seed: 62, size: SIZE });
    let expiries = 0;
    harness.sim.admin.setOnListPage((event: ListPageEvent) => {
      if (event.resource !== 'deals' || event.pageNumber !== 2 || expiries >= 2) return;
      expiries += 1;
      event.admin.expireCursors();
    });
    const failed = await harness.sync({ resources: ['deals'] });
    expect(failed.results[0]).toMatchObject({ outcome: 'failed' });
    expect(failed.results[0]?.error?.code).toBe('invalid_request');
    const next = await harness.sync({ resources: ['deals'] });
    expect(next.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });
});

describe('pages that overlap (the spec does not say a next page begins after the last record given)', () => {
  it.each(['keyset', 'offset'] as const)(
    'a service whose next page repeats the last record given (%s cursors) is walked in one clean pass, and the watermark moves',
    async (cursorKind) => {
      let clock = Date.parse('2026-06-01T00:00:00Z');
      harness = await startHarness({ seed: 60, size: SIZE, cursorKind, overlappingPages: true, now: () => clock });
      const first = await harness.sync({ resources: ['deals'] });
      expect(first.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 1 });
      await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
      clock += 60 * MINUTE;
      for (const record of harness.sim.admin.truth().records.deals.slice(0, 450)) {
        clock += 1000;
        harness.sim.admin.updateRecord('deals', record.id, { name: `renamed ${record.id}` });
      }
      clock += 10 * MINUTE;
      const next = await harness.sync({ resources: ['deals'] });
      expect(next.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 1 });
      expect(next.results[0]!.watermark).not.toBe(first.results[0]!.watermark);
      await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
    },
  );

  it('over overlapping pages, a record created behind an offset cursor in an id-ordered list makes the pass unclean, and the sync lists it', async () => {
    harness = await startHarness({ seed: 61, size: SIZE, cursorKind: 'offset', listOrder: 'id', overlappingPages: true });
    let behind: string | undefined;
    harness.sim.admin.setOnListPage((event: ListPageEvent) => {
      if (event.resource !== 'deals' || event.pageNumber !== 2 || behind !== undefined) return;
      const last = event.served.at(-1)!.id;
      // New ids are random: create until one sorts before the last record given, so the list shifts under the cursor.
      for (let tries = 0; tries < 50 && behind === undefined; tries++) {
        const { id } = event.admin.createRecord('deals', { name: `created mid-walk ${tries}` });
        if (id < last) behind = id;
      }
    });
    const report = await harness.sync({ resources: ['deals'] });
    expect(behind).toBeDefined();
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 2 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });
});

describe('changes stamped in whole seconds (the spec says only date-time)', () => {
  it.each(['keyset', 'offset'] as const)(
    'changes during a first sync, then a bulk change of 300 deals in one second (%s cursors; offset pages order a tie anew), end equal to the truth, every walk settled',
    async (cursorKind) => {
      harness = await startHarness({
        seed: 71,
        size: SIZE,
        cursorKind,
        tiesOrderedByPage: cursorKind === 'offset',
        wholeSecondStamps: true,
      });
      const fired = moveRecordsBehindTheCursor(harness.sim, 20, 3);
      expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
      expect(fired()).toBe(60);
      harness.sim.admin.setOnListPage(null);
      for (const deal of harness.sim.admin.truth().records.deals.slice(0, 300))
        harness.sim.admin.updateRecord('deals', deal.id, { amount: 7 });
      // A walk starting in the second the tie was stamped cannot tell it from a change made while it walks.
      await new Promise((resolve) => setTimeout(resolve, 1_010 - (Date.now() % 1_000)));
      for (let run = 1; run <= 2; run += 1) {
        expect((await harness.sync({ resources: ['deals'] })).results[0], `run ${run}`).toMatchObject({
          outcome: 'succeeded',
          settled: true,
        });
      }
      await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
    },
  );
});

describe('a pool of keys (the spec says to pass a cursor unchanged, and nothing of keys)', () => {
  it('over a service that accepts a cursor only on the key it was given to, syncs and a reconcile end equal to the truth', async () => {
    // Three keys of one organization: the limiter spreads requests over them, so a walk's second page would go out
    // on another key than its first, for every resource at once.
    const pool = [DEFAULT_KEYS.read, DEFAULT_KEYS.analyst, DEFAULT_KEYS.write].join(',');
    harness = await startHarness({ seed: 81, size: { ...SIZE, users: 250 }, cursorsBoundToKey: true }, { apiKey: pool });
    expect((await harness.sync()).ok).toBe(true);
    harness.sim.admin.mutateRandom(300, 8, ['update', 'create', 'activity']);
    expect((await harness.sync({ mode: 'full' })).ok).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim);
    harness.sim.admin.mutateRandom(5, 9, ['delete']);
    const env = harness.env();
    expect((await runReconcile(env.deps, env.settings, { resources: RECORD_RESOURCE_NAMES, concurrency: 3 })).ok).toBe(true);
    await expectMirrorsTruth(env.warehouse, harness.sim);
  });

  it("a walk whose cursor's key is told to wait an hour mid-walk lists its window again on the other keys, and the run ends equal to the truth", async () => {
    const pool = [DEFAULT_KEYS.read, DEFAULT_KEYS.analyst, DEFAULT_KEYS.write].join(',');
    harness = await startHarness(
      { seed: 82, size: SIZE, cursorsBoundToKey: true, faults: { rateLimitRetryAfterSeconds: 3600 } },
      { apiKey: pool },
    );
    let served = 0;
    harness.sim.admin.setOnListPage((event: ListPageEvent) => {
      // After the third page, the next deals page (sent on its cursor's key) is answered 429, Retry-After an hour.
      if (event.resource === 'deals' && ++served === 3) harness!.sim.admin.failNext(1, 'rateLimit', '/v1/deals/');
    });
    // Before, the walk failed with rate_limited, and every run resumed its checkpoint on that key until the hour passed.
    const report = await harness.sync({ resources: ['deals'] });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    expect(harness.sim.admin.stats().faults).toMatchObject({ rateLimit: 1 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });
});
