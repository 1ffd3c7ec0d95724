// A service as unkind as the spec allows with ties of `updated_at`: pages that begin with a tie the page before
// ended with, ties split by page boundaries and ordered anew by each page, rows a page repeats.
import { afterEach, describe, expect, it } from 'vitest';
import { canonicalInstant } from '../../src/core/time.js';
import type { ListPageEvent } from '../../src/simulator/index.js';
import type { Config } from '../../src/config.js';
import { runReconcile, type ResourceResult } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { FOUR_PAGES_OF_DEALS, startHarness, type Harness } from '../support/harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SIZE = FOUR_PAGES_OF_DEALS;
const MINUTE = 60_000;

describe('pages that overlap by a tie, and records listed twice in one page', () => {
  /** Give records [from, from+n) of the deals' list order one updated_at (a bulk import), across the page boundary at 200. */
  function tieAcrossBoundary(h: Harness, from: number, n: number): void {
    const ordered = [...h.sim.admin.truth().records.deals].sort(
      (a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at) || (a.id < b.id ? -1 : 1),
    );
    const stamp = ordered[from + n - 1]!.updated_at;
    for (const record of ordered.slice(from, from + n - 1)) h.sim.admin.setUpdatedAt('deals', record.id, stamp);
  }

  /** A sync of the deals that settles, leaving the mirror equal to the truth: its result. */
  async function settledSync(h: Harness, config: Partial<Config> = {}): Promise<ResourceResult> {
    const report = await h.sync({ resources: ['deals'], config });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    await expectMirrorsTruth(h.env().warehouse, h.sim, { resources: ['deals'] });
    return report.results[0]!;
  }

  /** A record deleted, then a reconcile: its sweep settles over these pages and marks exactly that deletion. */
  async function expectSweepMarksADeletion(h: Harness): Promise<void> {
    h.sim.admin.deleteRecord('deals', h.sim.admin.truth().records.deals[500]!.id);
    const env = h.env();
    const swept = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(swept.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, deleted: 1 });
    await expectMirrorsTruth(env.warehouse, h.sim, { resources: ['deals'] });
  }

  it.each([
    // The first page ends with three records of one updated_at; every other boundary repeats one record.
    ...(['keyset', 'offset'] as const).map((cursorKind) => ({ cursorKind, from: 197, tie: 3 })),
    // A page that ends in the tie, two pages of it alone, one that begins with the rest of it. Before, the boundary
    // after a page of one stamp (which begins with none of it) read as a list that moved: unsettled on every run.
    ...(['keyset', 'offset'] as const).map((cursorKind) => ({ cursorKind, from: 100, tie: 450 })),
  ])(
    'a next page that repeats every record sharing the last updated_at, or none after a page of one stamp ($cursorKind cursors, a tie of $tie), leaves a clean pass, and a reconcile marks a deletion',
    async ({ cursorKind, from, tie }) => {
      harness = await startHarness({ seed: 66, size: SIZE, cursorKind, overlappingPages: 'ties' });
      tieAcrossBoundary(harness, from, tie);
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
    // The passes after the first list the tie alone and end past it: two pages each, where the window has four.
    expect(first.results[0]!.pages).toBe(4 + 2 * (first.results[0]!.passes - 1));
    expect(first.results[0]!.watermark).not.toBeNull();
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });

    await expectSweepMarksADeletion(harness);
  });

  it.each([
    { tie: 150, served: 200 },
    { tie: 80, served: 100 },
  ])(
    'offset pages that begin with every record of the page before sharing its last updated_at, over a tie of $tie ordered anew by each page of $served, are received whole: settled, the next run takes one pass, and a reconcile marks a deletion',
    async ({ tie, served }) => {
      harness = await startHarness({
        seed: 68,
        size: SIZE,
        cursorKind: 'offset',
        tiesOrderedByPage: true,
        overlappingPages: 'ties',
        maxPageSize: served,
      });
      tieAcrossBoundary(harness, served - 50, tie);
      // A boundary inside the tie fits pages beginning with its last record as well as with the whole tie, which count
      // its places otherwise. Before, no pass could tell them apart: every run ended unsettled after four passes.
      const first = await settledSync(harness);
      expect(first.passes).toBeLessThanOrEqual(3);
      const next = await harness.sync({ resources: ['deals'] });
      expect(next.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 1 });

      await expectSweepMarksADeletion(harness);
    },
  );

  /** Offset pages that each begin with the last record of the page before and order a tie anew. */
  const OVERLAP_OVER_TIES = { seed: 68, size: SIZE, cursorKind: 'offset', tiesOrderedByPage: true, overlappingPages: true } as const;

  it('pages that each begin with the last record of the page before, over a tie of 350 ordered anew by each page, are received whole by passes taken together, and a reconcile marks a deletion', async () => {
    harness = await startHarness(OVERLAP_OVER_TIES);
    // The boundaries inside the tie begin with whichever record the page puts there: only the one past it shows
    // the service's overlap. Before, those boundaries counted as places of their own, more than the list had, so
    // no union of passes could cover it: every run ended unsettled with deals left out.
    tieAcrossBoundary(harness, 100, 350);
    const first = await settledSync(harness);
    expect(first.watermark).not.toBeNull();

    await expectSweepMarksADeletion(harness);
  });

  it.each([
    { maxPasses: 3, atMost: 5 },
    { maxPasses: 2, atMost: 6 },
  ])(
    'over such pages, a tie of 250 split 100 / 150 across pages of 200 (fewer of its ids given than a page holds) is received whole by the passes of the window taken together, at most $atMost with SALESYNC_MAX_PASSES=$maxPasses; the next run takes one pass',
    async ({ maxPasses, atMost }) => {
      harness = await startHarness(OVERLAP_OVER_TIES);
      // Each page orders the tie anew, so the window's pass is given about 190 of its ids, which a page of 200 could
      // hold with a record on each side; but none can hold 250. Before, passes over the stamps no page held whole went
      // on until they stopped gaining, then the walk ended unsettled, run after run, the window's passes spent; and
      // where they ended sooner, the passes of the window taken together began anew after them (9 passes at the
      // default, none settled with 2).
      tieAcrossBoundary(harness, 100, 250);
      const first = await settledSync(harness, { maxPasses });
      expect(first.passes).toBeLessThanOrEqual(atMost);
      const next = await harness.sync({ resources: ['deals'], config: { maxPasses } });
      expect(next.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 1 });
    },
  );

  it('passes taken together over such pages, with a Date header behind the records, settle: records changed before the first pass but stamped after its start are no sign the list moved', async () => {
    harness = await startHarness({ ...OVERLAP_OVER_TIES, clock: { dateSkewMs: -MINUTE } });
    tieAcrossBoundary(harness, 100, 350);
    const deals = harness.sim.admin.truth().records.deals;
    for (const deal of deals.slice(0, 3)) harness.sim.admin.updateRecord('deals', deal.id, { name: `renamed ${deal.id}` });
    // Before, every pass but the first received those three stamped after the union's start: no union held.
    await settledSync(harness);
  });

  it('over such pages served 100 at a time, a tie of 350 that fills whole pages is received whole once a boundary shows that pages do not begin with a whole tie again; a reconcile marks no live record deleted', async () => {
    harness = await startHarness({ ...OVERLAP_OVER_TIES, maxPageSize: 100 });
    // After a page of the tie alone, the next may have begun with one record of it again or with none: both fit, until
    // a page that ended with records of one stamp is followed by one that begins with one of them and then a later one.
    tieAcrossBoundary(harness, 198, 350);
    const first = await settledSync(harness);
    expect(first.passes).toBeGreaterThan(harness.env().settings.maxPasses);
    // The sweep learns the pages' habit anew, and may end unsettled before it does: then it marks nothing.
    const deleted = harness.sim.admin.truth().records.deals[500]!.id;
    harness.sim.admin.deleteRecord('deals', deleted);
    const env = harness.env();
    const swept = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
    expect(swept.results[0]!.deleted).toBeLessThanOrEqual(1);
    const marked = await env.warehouse.query(`SELECT id FROM deals WHERE _deleted_at IS NOT NULL`);
    expect(marked.filter((row) => row.id !== deleted)).toEqual([]);
  });

  it('a tie of 1,500 of 5,000 deals, ordered anew by each page, is received whole by passes taken together, though a page begins with the end of the one before by chance', async () => {
    const size = { deals: 5000, companies: 1, contacts: 1, meetingLogs: 1, contactActivities: 1, users: 1 };
    harness = await startHarness({ seed: 68, size, cursorKind: 'offset', tiesOrderedByPage: true });
    tieAcrossBoundary(harness, 100, 1500);
    // Before, that chance boundary read as a list that moved: the passes were no longer taken together, the run ended
    // unsettled with 20 deals left out, and every run after it alike.
    await settledSync(harness);
  });

  // Pages of 50 keep the shape of a tie of 6,000 in pages of 200 (30 pages of tie in a window of 35) at a quarter
  // of the records.
  describe(
    'a tie of 1,500 of 1,750 deals served 50 a page, ordered anew by each page (a bulk change stamped alike)',
    { timeout: 120_000 },
    () => {
      const size = { deals: 1750, companies: 1, contacts: 1, meetingLogs: 1, contactActivities: 1, users: 1 };
      const TIE_OPTIONS = { seed: 68, size, cursorKind: 'offset', tiesOrderedByPage: true, maxPageSize: 50 } as const;

      it('is received whole in one run by passes over the tie alone: settled, the watermark moves, the next run takes one pass, and a reconcile marks a deletion', async () => {
        harness = await startHarness(TIE_OPTIONS);
        tieAcrossBoundary(harness, 125, 1500);
        // Before, each pass of the window left about a third of the tie out, nine passes together a few records, and
        // the run ended unsettled: every run after it walked the window nine times, for as long as the tie was in it.
        const first = await settledSync(harness);
        expect(first.watermark).not.toBeNull();

        const next = await harness.sync({ resources: ['deals'] });
        expect(next.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 1 });
        await expectSweepMarksADeletion(harness);
      });

      it('a record of the tie changed while the tie is listed alone breaks those passes: the window is walked again, and the mirror ends equal to the truth', async () => {
        harness = await startHarness(TIE_OPTIONS);
        tieAcrossBoundary(harness, 125, 1500);
        const deals = harness.sim.admin.truth().records.deals;
        const counts = new Map<string, number>();
        const stamp = (r: { updated_at: string }) => canonicalInstant(r.updated_at)!;
        for (const r of deals) counts.set(stamp(r), (counts.get(stamp(r)) ?? 0) + 1);
        const tie = deals.filter((r) => counts.get(stamp(r))! > 100);
        expect(tie.length).toBe(1500);
        let served = 0;
        let changed = false;
        harness.sim.admin.setOnListPage((event: ListPageEvent) => {
          // The window's pass has 35 pages: the 50th page served is the first pass over the tie.
          if (event.resource !== 'deals' || (served += 1) !== 50) return;
          event.admin.updateRecord('deals', tie[1234]!.id, { amount: 4_242 });
          changed = true;
        });
        const first = await harness.sync({ resources: ['deals'] });
        expect(changed).toBe(true);
        expect(first.results[0]).toMatchObject({ outcome: 'succeeded' });
        // A pass of the window, one over the tie that found a place fewer, and the window again.
        expect(first.results[0]!.passes).toBeGreaterThanOrEqual(3);
        await settledSync(harness);
      });
    },
  );

  it('a record listed twice in a row in its page, the same version, leaves a clean pass: the watermark moves and a reconcile marks a deletion', async () => {
    harness = await startHarness({ seed: 67, size: SIZE });
    harness.sim.admin.listTwice('deals', harness.sim.admin.truth().records.deals[10]!.id);
    const first = await harness.sync({ resources: ['deals'] });
    expect(first.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 1 });
    expect(first.results[0]!.watermark).not.toBeNull();
    await expectSweepMarksADeletion(harness);
  });
});
