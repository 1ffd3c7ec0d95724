import { describe, expect, it } from 'vitest';
import { PassSignals } from '../../src/sync/pass-signals.js';

const start = '2026-03-01T11:00:00Z';
const rec = (id: string, updated_at: string) => ({ id, updated_at });
type Stamped = { id: string; updated_at: string };
const before = (n: number) => `2026-03-01T10:${String(n).padStart(2, '0')}:00Z`;

describe('PassSignals', () => {
  it('finds a quiet pass clean and keeps the largest updated_at it received', () => {
    const signals = new PassSignals(start);
    signals.observe([rec('a'.repeat(18), before(1)), rec('b'.repeat(18), before(30))]);
    signals.observe([rec('c'.repeat(18), '2026-03-01T19:10:00+09:00')]);
    expect(signals.snapshot()).toEqual({ dirty: null, maxUpdatedAt: '2026-03-01T10:10:00.000000Z'.replace('10:10', '10:30') });
  });

  it('finds a pass dirty when a record changed after its start (it moved in an updated_at-ordered list)', () => {
    const signals = new PassSignals(start);
    signals.observe([rec('a'.repeat(18), before(1))]);
    signals.observe([rec('b'.repeat(18), '2026-03-01T20:00:01.5+09:00')]);
    expect(signals.snapshot().dirty).toBe('changed_during_pass');
  });

  it('finds a pass dirty when the single view of a listed record was missing (left out, so its window was not all seen)', () => {
    const signals = new PassSignals(start);
    signals.observe([rec('a'.repeat(18), before(1))]);
    expect(signals.snapshot().dirty).toBeNull();
    signals.detailMissing();
    expect(signals.snapshot()).toEqual({ dirty: 'detail_missing', maxUpdatedAt: '2026-03-01T10:01:00.000000Z' });
  });

  it('does not count a record updated within the whole second its Date header names: it may predate the pass', () => {
    const signals = new PassSignals(start);
    signals.observe([rec('a'.repeat(18), '2026-03-01T11:00:00.999999Z')]);
    expect(signals.snapshot().dirty).toBeNull();
  });

  it('finds a pass dirty when an id comes back in the same pass (an offset cursor over a list that grew behind it)', () => {
    const signals = new PassSignals(start);
    signals.observe([rec('a'.repeat(18), before(1)), rec('b'.repeat(18), before(2))]);
    signals.observe([rec('b'.repeat(18), before(2))]);
    expect(signals.snapshot().dirty).toBe('id_repeated');
  });

  it('tells its union the places its pages had (a row repeated within a page once, rejects too) and whether ids coming twice was its only flaw', () => {
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((x) => x.repeat(18)) as [string, string, string, string];
    const signals = new PassSignals(start);
    signals.observe([rec(a, before(1)), rec(a, before(1)), rec(b, before(2))]);
    signals.observe([rec(c, before(3)), rec(a, before(1))]);
    signals.observeRejects([{ id: d }]);
    expect(signals.coverage()).toEqual({ positions: 5, onlyRepeats: true });
    signals.observeRejects([{ id: null }]);
    expect(signals.coverage()).toEqual({ positions: 6, onlyRepeats: false });
    const repeatedCursor = new PassSignals(start);
    repeatedCursor.observe([rec(a, before(1)), rec(b, before(2))]);
    repeatedCursor.observe([rec(c, before(3)), rec(a, before(1))], true);
    expect(repeatedCursor.coverage().onlyRepeats).toBe(false);
  });

  it('a page that begins with the end of the page before where no boundary before did (a tie ordered anew by each page, by chance) is a record listed twice, a place of its own', () => {
    const [a, b, c, d, e, f, g, h] = 'abcdefgh'.split('').map((x) => x.repeat(18)) as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const signals = new PassSignals(start);
    // One tie throughout: the first boundary overlaps by nothing, the second by the record that ended the page before.
    signals.observe([rec(a, before(1)), rec(b, before(1)), rec(c, before(1))]);
    signals.observe([rec(d, before(1)), rec(e, before(1)), rec(f, before(1))]);
    signals.observe([rec(f, before(1)), rec(g, before(1)), rec(h, before(1))]);
    expect(signals.snapshot().dirty).toBe('id_repeated');
    expect(signals.coverage()).toEqual({ positions: 9, onlyRepeats: true });
  });

  it('finds a pass dirty when the service gave a cursor it had given before', () => {
    const signals = new PassSignals(start);
    signals.observe([rec('a'.repeat(18), before(1))], true);
    expect(signals.snapshot().dirty).toBe('cursor_repeated');
  });

  it('a resumed pass carries what its checkpoint recorded: dirty stays dirty, the largest updated_at is kept', () => {
    expect(new PassSignals(start, new Map(), { dirty: true, maxUpdatedAt: null }).snapshot().dirty).toBe('before_resume');
    const clean = new PassSignals(start, new Map(), { dirty: false, maxUpdatedAt: before(40) });
    clean.observe([rec('a'.repeat(18), before(5))]);
    expect(clean.snapshot()).toEqual({ dirty: null, maxUpdatedAt: '2026-03-01T10:40:00.000000Z' });
  });

  it('does not count again a record the previous pass already saw at or after its start with the same updated_at (a Date header behind the records)', () => {
    const first = new PassSignals(start);
    first.observe([rec('a'.repeat(18), '2026-03-01T12:00:00Z')]);
    expect(first.snapshot().dirty).toBe('changed_during_pass');
    const second = new PassSignals('2026-03-01T11:05:00Z', first.recent);
    second.observe([rec('a'.repeat(18), '2026-03-01T21:00:00+09:00')]);
    expect(second.snapshot().dirty).toBeNull();
    second.observe([rec('b'.repeat(18), '2026-03-01T12:00:01Z')]);
    expect(second.snapshot().dirty).toBe('changed_during_pass');
  });

  it('does not count a record given twice in a row in one page, the same version, as the list moving; another version of it does', () => {
    const twice = new PassSignals(start);
    twice.observe([rec('a'.repeat(18), before(1)), rec('a'.repeat(18), before(1)), rec('b'.repeat(18), before(2))]);
    twice.observe([rec('c'.repeat(18), before(3))]);
    expect(twice.snapshot().dirty).toBeNull();
    const moved = new PassSignals(start);
    moved.observe([rec('a'.repeat(18), before(1)), rec('b'.repeat(18), before(2)), rec('a'.repeat(18), before(3))]);
    expect(moved.snapshot().dirty).toBe('id_repeated');
  });

  describe('pages that overlap (an inclusive cursor)', () => {
    const id = (n: number) => String(n).padStart(18, 'x');
    /** Pages of `size` records from `ids`, each beginning `overlap` records before the page before ended. */
    const pages = (ids: number[], size: number, overlaps: number[]) => {
      const out: Array<ReturnType<typeof rec>[]> = [];
      let at = 0;
      for (let page = 0; at < ids.length; page++) {
        if (page > 0) at -= overlaps[page - 1] ?? 0;
        out.push(ids.slice(at, at + size).map((n) => rec(id(n), before(n % 60))));
        at += size;
      }
      return out;
    };
    const ids = Array.from({ length: 12 }, (_, i) => i);

    it('finds a pass clean whose every page begins with the last record of the page before', () => {
      const signals = new PassSignals(start);
      for (const page of pages(ids, 4, [1, 1, 1])) signals.observe(page);
      expect(signals.snapshot().dirty).toBeNull();
      expect(signals.pageOverlap()).toMatchObject({ records: 1, ties: true, boundaries: 3 });
    });

    it('finds a pass of one overlapping boundary unclean (it could be a record inserted behind an offset cursor), and the next pass that overlaps alike clean', () => {
      const first = new PassSignals(start);
      for (const page of pages(ids.slice(0, 7), 4, [1])) first.observe(page);
      expect(first.snapshot().dirty).toBe('id_repeated');
      const second = new PassSignals(start, first.recent, null, first.pageOverlap());
      for (const page of pages(ids.slice(0, 7), 4, [1])) second.observe(page);
      expect(second.snapshot().dirty).toBeNull();
    });

    it('finds a pass dirty where one boundary overlaps unlike the others: a record inserted (one more) or deleted (one fewer) behind the cursor', () => {
      for (const overlaps of [
        [1, 2, 1],
        [1, 0, 1],
        [0, 1, 0],
      ]) {
        const signals = new PassSignals(start);
        for (const page of pages(ids, 4, overlaps)) signals.observe(page);
        expect(signals.snapshot().dirty, overlaps.join()).toBe('id_repeated');
        expect(signals.pageOverlap()).toBeNull();
      }
    });

    it('takes a record repeated at a boundary with the same instant in another offset for an overlap', () => {
      const signals = new PassSignals(start);
      signals.observe([rec(id(1), '2026-03-01T10:01:00Z'), rec(id(2), '2026-03-01T10:02:00Z')]);
      signals.observe([rec(id(2), '2026-03-01T19:02:00+09:00'), rec(id(3), '2026-03-01T10:03:00Z')]);
      signals.observe([rec(id(3), '2026-03-01T10:03:00.000000Z'), rec(id(4), '2026-03-01T10:04:00Z')]);
      expect(signals.snapshot().dirty).toBeNull();
    });

    it('finds a pass clean whose pages each begin with every record of the page before sharing its last updated_at (a cursor on updated_at >= alone)', () => {
      const signals = new PassSignals(start);
      const stamp = before(9);
      signals.observe([rec(id(1), before(1)), rec(id(2), stamp), rec(id(3), stamp), rec(id(4), stamp)]);
      signals.observe([rec(id(2), stamp), rec(id(3), stamp), rec(id(4), stamp), rec(id(5), before(10)), rec(id(6), before(11))]);
      signals.observe([rec(id(6), before(11)), rec(id(7), before(12))]);
      expect(signals.snapshot().dirty).toBeNull();
      expect(signals.pageOverlap()).toMatchObject({ records: null, ties: true, boundaries: 2 });
    });

    it('finds a pass dirty where a page begins with neither the overlap of the others nor the tie the page before ended with', () => {
      const stamp = before(9);
      const first = [rec(id(1), before(1)), rec(id(2), before(2)), rec(id(3), before(3))];
      const second = [rec(id(3), before(3)), rec(id(4), before(4)), rec(id(5), stamp), rec(id(6), stamp), rec(id(7), stamp)];
      for (const third of [
        [rec(id(7), stamp), rec(id(8), before(10))].slice(1), // none of the tie: a record deleted behind the cursor
        [rec(id(6), stamp), rec(id(7), stamp), rec(id(8), before(10))], // two of its three
      ]) {
        const signals = new PassSignals(start);
        for (const page of [first, second, third]) signals.observe(page);
        expect(signals.snapshot().dirty).toBe('id_repeated');
      }
    });

    it('over pages that overlap by one record, a tie ordered anew by each page has its places counted by the overlap the boundaries outside it showed', () => {
      // Twelve records; seven (A to G) share one updated_at at places 2 to 8. Each page of four begins with the last
      // place of the one before, and orders the tie its own way: C is never given, B twice, and the boundaries inside
      // the tie begin with records the page before did not end with.
      const tie = before(5);
      const [A, B, D, E, F, G] = [2, 3, 5, 6, 7, 8].map((n) => rec(id(n), tie)) as [Stamped, Stamped, Stamped, Stamped, Stamped, Stamped];
      const r = (n: number) => rec(id(n), before(n));
      const signals = new PassSignals(start);
      signals.observe([r(0), r(1), A, B]);
      signals.observe([D, A, E, B]);
      signals.observe([E, F, G, r(9)]);
      signals.observe([r(9), r(10), r(11)]);
      expect(signals.snapshot().dirty).toBe('id_repeated');
      // Fifteen records given, three of them at boundaries: twelve places, of which eleven ids (C left out).
      expect(signals.coverage()).toEqual({ positions: 12, onlyRepeats: true });
      expect(signals.ids.size).toBe(11);
    });

    it('a page that begins with the last record of the page before and repeats its row (a join) leaves a clean pass: one place, not two', () => {
      const signals = new PassSignals(start);
      signals.observe([rec(id(1), before(1)), rec(id(2), before(2))]);
      signals.observe([rec(id(2), before(2)), rec(id(2), before(2)), rec(id(3), before(3))]);
      signals.observe([rec(id(3), before(3)), rec(id(4), before(4))]);
      expect(signals.snapshot().dirty).toBeNull();
      expect(signals.coverage().positions).toBe(4);
    });

    it('does not take a record repeated at a boundary with another updated_at for an overlap', () => {
      const signals = new PassSignals(start);
      signals.observe([rec(id(1), before(1)), rec(id(2), before(2))]);
      signals.observe([rec(id(2), before(3)), rec(id(3), before(4))]);
      signals.observe([rec(id(3), before(4)), rec(id(4), before(5))]);
      expect(signals.snapshot().dirty).toBe('id_repeated');
    });
  });
});
