import { afterEach, describe, expect, it } from 'vitest';
import type { SalesApi } from '../../src/api/types.js';
import { DEFAULT_PAGE_SIZE } from '../../src/api/client.js';
import { RECORD_RESOURCE_NAMES } from '../../src/core/resources.js';
import type { PropertyDefinition } from '../../src/core/types.js';
import type { ListPageEvent } from '../../src/simulator/index.js';
import { reconcileStateKey, runReconcile, runSync } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startTamperProxy } from '../support/tamper-proxy.js';
import { wrapApi } from '../support/wrap-api.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SIZE = { deals: 700, companies: 60, contacts: 60, meetingLogs: 30, contactActivities: 30, users: 5 };
const DAY = 86_400_000;
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

  it('a change an incremental walk stepped over when a record was deleted behind its offset cursor is written by the next incremental sync', async () => {
    // The service's clock, moved by hand: changes spread over far more than the lookback, so only a walk that lists
    // the window again can see the record stepped over.
    let clock = Date.parse('2026-06-01T00:00:00Z');
    harness = await startHarness({ seed: 54, size: SIZE, cursorKind: 'offset', listOrder: 'updated_at', now: () => clock });
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
  });

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

describe('pages that overlap by a tie, and records listed twice in one page', () => {
  /** Give records [from, from+n) of the deals' list order one updated_at (a bulk import), across the page boundary at 200. */
  function tieAcrossBoundary(h: Harness, from: number, n: number): void {
    const ordered = [...h.sim.admin.truth().records.deals].sort(
      (a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at) || (a.id < b.id ? -1 : 1),
    );
    const stamp = ordered[from + n - 1]!.updated_at;
    for (const record of ordered.slice(from, from + n - 1)) h.sim.admin.setUpdatedAt('deals', record.id, stamp);
  }

  /** A record deleted, then a reconcile: its sweep settles over these pages and marks exactly that deletion. */
  async function expectSweepMarksADeletion(h: Harness): Promise<void> {
    h.sim.admin.deleteRecord('deals', h.sim.admin.truth().records.deals[500]!.id);
    const env = h.env();
    const swept = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(swept.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, deleted: 1 });
    await expectMirrorsTruth(env.warehouse, h.sim, { resources: ['deals'] });
  }

  it.each(['keyset', 'offset'] as const)(
    'a next page that repeats every record sharing the last updated_at (%s cursors) leaves a clean pass, and a reconcile marks a deletion',
    async (cursorKind) => {
      harness = await startHarness({ seed: 66, size: SIZE, cursorKind, overlappingPages: 'ties' });
      // The first page ends with three records of one updated_at; every other boundary repeats one record.
      tieAcrossBoundary(harness, 197, 3);
      const first = await harness.sync({ resources: ['deals'] });
      expect(first.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 1 });
      await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });

      await expectSweepMarksADeletion(harness);
    },
  );

  it.each([
    { served: 200, pages: 'as large as asked' },
    { served: 100, pages: 'of 100 whatever page_size asks' },
  ])(
    'offset pages ($pages) that order a tie by the page asked for (one of it listed twice, another never) are walked again with other boundaries: nothing is lost, and a reconcile marks a deletion',
    async ({ served }) => {
      harness = await startHarness({ seed: 68, size: SIZE, cursorKind: 'offset', tiesOrderedByPage: true, maxPageSize: served });
      // Ten records share one updated_at across the first boundary.
      tieAcrossBoundary(harness, served - 5, 10);
      const first = await harness.sync({ resources: ['deals'] });
      expect(first.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 2 });
      await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });

      await expectSweepMarksADeletion(harness);
    },
  );

  it('a tie larger than any page, ordered anew by each page (a bulk change stamped alike), is received whole by passes taken together: nothing lost, the watermark moves', async () => {
    harness = await startHarness({ seed: 68, size: SIZE, cursorKind: 'offset', tiesOrderedByPage: true });
    // 350 records share one updated_at: every pass splits the tie at a boundary or two, and leaves some of it out.
    tieAcrossBoundary(harness, 100, 350);
    const first = await harness.sync({ resources: ['deals'] });
    expect(first.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    expect(first.results[0]!.passes).toBeGreaterThan(harness.env().settings.maxPasses);
    expect(first.results[0]!.watermark).not.toBeNull();
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });

    await expectSweepMarksADeletion(harness);
  });

  it('a record listed twice in a row in its page, the same version, leaves a clean pass: the watermark moves and a reconcile marks a deletion', async () => {
    harness = await startHarness({ seed: 67, size: SIZE });
    harness.sim.admin.listTwice('deals', harness.sim.admin.truth().records.deals[10]!.id);
    const first = await harness.sync({ resources: ['deals'] });
    expect(first.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 1 });
    expect(first.results[0]!.watermark).not.toBeNull();
    await expectSweepMarksADeletion(harness);
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

describe('dates at the ends of the calendar (the spec: a date, a date-time)', () => {
  it('a date in year 0 and date-times an offset puts in year 0 or 10000 (in UTC) fill their typed columns', async () => {
    harness = await startHarness({ seed: 65, size: SIZE });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const deals = harness.sim.admin.truth().records.deals;
    const inUtc = deals.filter((d) => d.updated_at.endsWith('Z'));
    harness.sim.admin.updateRecord('deals', inUtc[0]!.id, { dA7vL2nR: '0000-01-01' });
    harness.sim.admin.updateRecord('deals', inUtc[1]!.id, { dT5wY8cE: '0001-01-01T00:00:00+09:00' });
    harness.sim.admin.updateRecord('deals', inUtc[2]!.id, { dT5wY8cE: '9999-12-31T23:00:00-09:00' });
    expect((await harness.sync({ resources: ['deals'] })).results[0]).toMatchObject({ outcome: 'succeeded', rejected: 0 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
    const ids = inUtc.slice(0, 3).map((d) => `'${d.id}'`);
    const typed = await harness
      .env()
      .warehouse.query(
        `SELECT count(*)::INTEGER AS n FROM deals WHERE id IN (${ids.join(', ')}) AND coalesce("dA7vL2nR", "dT5wY8cE") IS NULL`,
      );
    expect(typed).toEqual([{ n: 0 }]);
  });
});

describe('instants no TIMESTAMPTZ column holds', () => {
  it("a date-time property before year 0000 in UTC or past DuckDB's last instant is a NULL cell, not a batch that fails for good", async () => {
    harness = await startHarness({ seed: 70, size: SIZE });
    const env = harness.env();
    const [early, late] = harness.sim.admin.truth().records.deals;
    const far: Record<string, string> = { [early!.id]: '0000-01-01T00:00:00+01:00', [late!.id]: '999999-01-01T00:00:00Z' };
    // The simulator keeps its dates in range; the spec says only "a date-time": the answers carry these instead.
    const makeApi = (): SalesApi => {
      const api = env.deps.makeApi();
      return wrapApi(api, {
        async *listPages(resource, options) {
          for await (const page of api.listPages(resource, options)) {
            yield {
              ...page,
              results: page.results.map((r) => (far[r.id] ? { ...r, properties: { ...r.properties, dT5wY8cE: far[r.id]! } } : r)),
            };
          }
        },
      });
    };
    for (let run = 0; run < 2; run++) {
      const report = await runSync({ ...env.deps, makeApi }, env.settings, { resources: ['deals'], mode: 'full', concurrency: 1 });
      expect(report.results[0]).toMatchObject({ outcome: 'succeeded', rejected: 0 });
    }
    const cells = await env.warehouse.query(
      `SELECT "dT5wY8cE" AS cell, _properties->>'dT5wY8cE' AS sent FROM deals WHERE id IN ('${early!.id}', '${late!.id}') ORDER BY sent`,
    );
    expect(cells).toEqual([
      { cell: null, sent: '0000-01-01T00:00:00+01:00' },
      { cell: null, sent: '999999-01-01T00:00:00Z' },
    ]);
  });
});

describe('a users list that answers empty', () => {
  it('marks no user deleted: the warehouse keeps the users it had', async () => {
    harness = await startHarness({ seed: 69, size: SIZE });
    expect((await harness.sync({ resources: ['users'] })).ok).toBe(true);
    let empty = true;
    const proxy = await startTamperProxy(harness.url, (path, body) =>
      path === '/v1/users/' && empty ? { ...(body as object), results: [], paging: { next: null } } : undefined,
    );
    try {
      expect((await harness.sync({ resources: ['users'], config: { baseUrl: proxy.url } })).ok).toBe(true);
      const warehouse = harness.env().warehouse;
      expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM users WHERE _deleted_at IS NOT NULL`)).toEqual([{ n: 0 }]);
      empty = false;
      await expectMirrorsTruth(warehouse, harness.sim, { resources: [], users: true });
    } finally {
      await proxy.close();
    }
  });
});

describe('a users list under an offset cursor (the spec says only that it pages by cursor)', () => {
  it('the user a listing stepped over, when one was removed behind its cursor, stays live; the removed one is marked by the next listing', async () => {
    harness = await startHarness({ seed: 70, size: { ...SIZE, users: 450 }, usersCursorKind: 'offset' });
    expect((await harness.sync({ resources: ['users'] })).ok).toBe(true);
    let removed: string | undefined;
    let pages = 0;
    const proxy = await startTamperProxy(harness.url, (path, body) => {
      const { results } = body as { results: { id: string }[] };
      // Not the sync's one-user probe of the key: a page of the listing.
      if (path !== '/v1/users/' || results.length !== DEFAULT_PAGE_SIZE) return undefined;
      pages += 1;
      // The first page was given: removing its first user shifts the rest one place back under the cursor.
      if (removed === undefined) {
        removed = results[0]!.id;
        harness!.sim.admin.removeUser(removed);
      }
      return undefined;
    });
    try {
      const moving = await harness.sync({ resources: ['users'], config: { baseUrl: proxy.url } });
      expect(moving.ok).toBe(true);
      expect(pages).toBe(2);
      const warehouse = () => harness!.env().warehouse;
      // The listing gave the removed user before it went, and stepped over another, who is not gone.
      expect(await warehouse().query(`SELECT id FROM users WHERE _deleted_at IS NOT NULL`)).toEqual([]);
      expect(moving.results.find((r) => r.resource === 'users')!.details).toBe(1);
      expect((await harness.sync({ resources: ['users'], config: { baseUrl: proxy.url } })).ok).toBe(true);
      expect(await warehouse().query(`SELECT id FROM users WHERE _deleted_at IS NOT NULL`)).toEqual([{ id: removed }]);
      await expectMirrorsTruth(warehouse(), harness.sim, { resources: [], users: true });
    } finally {
      await proxy.close();
    }
  });
});

describe('definitions listed twice (the spec does not say an api_name is listed once)', () => {
  it('a property listed twice with two types, in an order that alternates, keeps one column and one type sync after sync', async () => {
    harness = await startHarness({ seed: 64, size: SIZE });
    let calls = 0;
    const proxy = await startTamperProxy(harness.url, (path, body) => {
      if (path !== '/v1/deals/properties/') return undefined;
      const { results } = body as { results: PropertyDefinition[] };
      calls += 1;
      const twice = { ...results.find((d) => d.api_name === 'dK3mP9xQ')!, property_type: 'text' };
      return { results: calls % 2 ? [...results, twice] : [twice, ...results] };
    });
    try {
      for (let run = 1; run <= 4; run += 1) {
        harness.sim.admin.mutateRandom(5, run, ['update']);
        expect((await harness.sync({ resources: ['deals'], config: { baseUrl: proxy.url } })).ok).toBe(true);
      }
      const warehouse = harness.env().warehouse;
      expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM property_type_changes`)).toEqual([{ n: 0 }]);
      expect(
        await warehouse.query(`SELECT column_name FROM duckdb_columns() WHERE table_name = 'deals' AND column_name ILIKE 'dK3mP9xQ%'`),
      ).toEqual([{ column_name: 'dK3mP9xQ' }]);
      await expectMirrorsTruth(warehouse, harness.sim, { resources: ['deals'] });
    } finally {
      await proxy.close();
    }
  });
});

describe('text the warehouse cannot hold as sent', () => {
  it('a value and an option label cut inside an emoji (a lone surrogate, valid JSON) are stored with U+FFFD, and the resource keeps syncing', async () => {
    harness = await startHarness({ seed: 62, size: SIZE });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const cut = '商談メモ😀'.slice(0, 5);
    const deals = harness.sim.admin.truth().records.deals;
    for (const deal of deals.slice(0, 10)) harness.sim.admin.updateRecord('deals', deal.id, { name: `renamed ${deal.id}` });
    harness.sim.admin.updateRecord('deals', deals[20]!.id, { name: cut });
    const stage = harness.sim.admin.truth().properties.deals.find((d) => d.api_name === 'stage')!;
    harness.sim.admin.updatePropertyOptions('deals', 'stage', [...stage.options!, { value: 'cut_label', label: cut }]);
    const report = await harness.sync({ resources: ['deals'] });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', rejected: 0 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
    expect(await harness.env().warehouse.query(`SELECT name FROM deals WHERE id = '${deals[20]!.id}'`)).toEqual([
      { name: '商談メモ\uFFFD' },
    ]);
    expect(
      await harness.env().warehouse.query(`SELECT label FROM property_options WHERE resource = 'deals' AND value = 'cut_label'`),
    ).toEqual([{ label: '商談メモ\uFFFD' }]);
  });
});

describe('a single view behind its list (the spec promises no consistency between them)', () => {
  it('a meeting log listed but whose single view answers not_found once is written, with its summaries, by the same sync', async () => {
    harness = await startHarness({ seed: 55, size: SIZE });
    const [log] = harness.sim.admin.truth().records['meeting-logs'];
    harness.sim.admin.failNext(1, 'notFound', `/v1/meeting-logs/${log!.id}/`);
    const report = await harness.sync({ resources: ['meeting-logs'] });
    expect(harness.sim.admin.stats().faults.notFound).toBe(1);
    // Left out of its batch, so that pass had not seen its whole window: the next pass listed it again.
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 2 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['meeting-logs'] });
  });

  it('a meeting log whose single view never stops answering not_found is written from its list row on the second pass: the sync settles and a reconcile marks deletions', async () => {
    harness = await startHarness({ seed: 68, size: SIZE });
    expect((await harness.sync({ resources: ['meeting-logs'] })).ok).toBe(true);
    const deal = harness.sim.admin.truth().records.deals[0]!;
    const { activity: stuck } = harness.sim.admin.recordActivity('meeting-logs', deal.id);
    harness.sim.admin.failNext(100_000, 'notFound', `/v1/meeting-logs/${stuck.id}/`);
    const report = await harness.sync({ resources: ['meeting-logs'] });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 2 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['meeting-logs'] });
    const [gone] = harness.sim.admin.truth().records['meeting-logs'];
    harness.sim.admin.deleteRecord('meeting-logs', gone!.id);
    const env = harness.env();
    const swept = await runReconcile(env.deps, env.settings, { resources: ['meeting-logs'], concurrency: 1 });
    expect(swept.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 1 });
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['meeting-logs'] });
  });

  it('a meeting log whose single view shows an older version than its list row is not written stale: the second pass writes its list row', async () => {
    let clock = Date.parse('2026-06-01T00:00:00Z');
    harness = await startHarness({ seed: 56, size: SIZE, now: () => clock });
    expect((await harness.sync({ resources: ['meeting-logs'] })).ok).toBe(true);
    const [behind, ahead] = harness.sim.admin.truth().records['meeting-logs'];
    // The single view of the first lags an hour behind the list; a change ten minutes later bounds the watermark.
    harness.sim.admin.setCommitLag(60 * MINUTE, 'single');
    clock += MINUTE;
    harness.sim.admin.updateRecord('meeting-logs', behind!.id, { meeting_name: 'changed while a replica lags' });
    harness.sim.admin.setCommitLag(0);
    clock += 10 * MINUTE;
    harness.sim.admin.updateRecord('meeting-logs', ahead!.id, { meeting_name: 'changed later' });
    clock += MINUTE;
    // Every pass sees the single view behind: the first leaves the log out, the second writes its list row.
    expect((await harness.sync({ resources: ['meeting-logs'] })).results[0]).toMatchObject({
      outcome: 'succeeded',
      settled: true,
      passes: 2,
    });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['meeting-logs'] });
    clock += 2 * 60 * MINUTE;
    expect((await harness.sync({ resources: ['meeting-logs'] })).results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['meeting-logs'] });
  });
});

describe('JSON laid out otherwise (the spec fixes neither member order nor spacing)', () => {
  it('lists naming paging first, in indented JSON: a sync mirrors the truth and asks for each page once, as for compact JSON', async () => {
    const requestsUnder = async (jsonLayout: 'compact' | 'unkind') => {
      harness = await startHarness({ seed: 47, size: SIZE, jsonLayout });
      expect((await harness.sync()).ok).toBe(true);
      await expectMirrorsTruth(harness.env().warehouse, harness.sim);
      const { byRoute } = harness.sim.admin.stats();
      await harness.close();
      harness = undefined;
      return byRoute;
    };
    const compact = await requestsUnder('compact');
    const unkind = await requestsUnder('unkind');
    // Every page read ahead from the text found the cursor the parsed page confirmed: no request was wasted.
    expect(unkind['GET /v1/deals/']).toBe(Math.ceil(SIZE.deals / DEFAULT_PAGE_SIZE));
    expect(unkind).toEqual(compact);
  });
});

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

  it('a record whose updated_at moved backwards is written by the next full walk, and by a reconcile', async () => {
    harness = await startHarness({ seed: 49, size: SIZE });
    expect((await harness.sync({ resources: ['deals', 'companies'] })).ok).toBe(true);
    const [deal] = harness.sim.admin.truth().records.deals;
    const [company] = harness.sim.admin.truth().records.companies;
    harness.sim.admin.setUpdatedAt('deals', deal!.id, '2020-01-01T00:00:00.000001Z');
    harness.sim.admin.setUpdatedAt('companies', company!.id, '2020-01-01T00:00:00.000001Z');
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

describe('an error answered with a success status (the spec leaves the statuses of not_found and internal_error unshown)', () => {
  it("a meeting log single view answered 200 with the service's internal_error envelope is retried, not quarantined", async () => {
    harness = await startHarness({ seed: 58, size: SIZE });
    expect((await harness.sync({ resources: ['meeting-logs'] })).ok).toBe(true);
    const [log] = harness.sim.admin.truth().records['meeting-logs'];
    harness.sim.admin.updateRecord('meeting-logs', log!.id, { meeting_name: 'changed before a 200 error' });
    harness.sim.admin.failNext(1, 'error200', `/v1/meeting-logs/${log!.id}/`);
    const report = await harness.sync({ resources: ['meeting-logs'] });
    expect(harness.sim.admin.stats().faults.error200).toBe(1);
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, rejected: 0 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['meeting-logs'] });
  });

  it('rate_limited answered under status 503 is waited out as a 429 (the key paused), not retried as a server error', async () => {
    harness = await startHarness({ seed: 63, size: SIZE, faults: { rateLimitRetryAfterSeconds: 0 } });
    harness.sim.admin.failNext(2, 'rateLimit503', '/v1/deals/');
    const report = await harness.sync({ resources: ['deals'] });
    expect(harness.sim.admin.stats().faults.rateLimit503).toBe(2);
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', rateLimited: 2 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });

  it("a list page answered 200 with the service's internal_error envelope is retried like a 500", async () => {
    harness = await startHarness({ seed: 59, size: SIZE });
    harness.sim.admin.failNext(2, 'error200', '/v1/deals/');
    const report = await harness.sync({ resources: ['deals'] });
    expect(harness.sim.admin.stats().faults.error200).toBe(2);
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });
});
