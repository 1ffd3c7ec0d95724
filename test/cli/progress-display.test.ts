import { stripVTControlCharacters } from 'node:util';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BackfillProgressLine, estimateBackfill } from '../../src/cli/backfill-progress.js';
import { ProgressDisplay, TICK_MS } from '../../src/cli/progress-display.js';
import { formatCount } from '../../src/cli/format.js';
import { estimateRemainingMs, expectedRecords, MAX_ETA_MS, type ResourceProgress } from '../../src/sync/progress.js';
import type { RunRow } from '../../src/warehouse/types.js';

/** A terminal that keeps what was written to it, without the escape sequences. */
function fakeTerminal(isTTY = true) {
  const chunks: string[] = [];
  const stream = {
    isTTY,
    columns: 240,
    rows: 40,
    write: (chunk: string | Uint8Array) => {
      chunks.push(stripVTControlCharacters(String(chunk)));
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  let mark = 0;
  return {
    stream,
    all: () => chunks.join(''),
    /** What was written since the last call. */
    fresh: () => {
      const text = chunks.slice(mark).join('');
      mark = chunks.length;
      return text;
    },
  };
}

function progress(over: Partial<ResourceProgress> = {}): ResourceProgress {
  return {
    resource: 'deals',
    mode: 'full',
    phase: 'walking',
    pages: 0,
    records: 0,
    recordsBefore: 0,
    requests: 0,
    written: 0,
    startedAtMs: Date.now(),
    resumed: false,
    ...over,
  };
}

const occurrences = (text: string, word: string) => text.split(word).length - 1;

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2025-01-01T00:00:00Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('ProgressDisplay', () => {
  it('redraws every second while no page arrives: the elapsed time moves', () => {
    const term = fakeTerminal();
    const display = new ProgressDisplay(term.stream);
    display.update(progress({ resource: 'meeting-logs', mode: 'incremental', requests: 1 }));
    vi.advanceTimersByTime(TICK_MS);
    expect(term.fresh()).toMatch(/meeting-logs .* 1\.0s/);
    vi.advanceTimersByTime(TICK_MS);
    expect(term.fresh()).toMatch(/meeting-logs .* 2\.0s/);
    vi.advanceTimersByTime(TICK_MS);
    expect(term.fresh()).toMatch(/meeting-logs .* 3\.0s/);
    display.stop();
  });

  it('counts the requests made since the last report at each tick (single views fetched before the first page)', () => {
    const term = fakeTerminal();
    const display = new ProgressDisplay(term.stream);
    let made = 1;
    display.update(progress({ resource: 'meeting-logs', mode: 'incremental', requests: 1 }), { requests: () => made });
    vi.advanceTimersByTime(TICK_MS);
    expect(term.fresh()).toMatch(/meeting-logs .* 1 request .* 60 req\/min/);
    made = 40;
    vi.advanceTimersByTime(TICK_MS);
    expect(term.fresh()).toMatch(/meeting-logs .* 40 requests .* 1,200 req\/min/);
    display.stop();
  });

  it('shows an ETA for a full walk that knows how many records to expect', () => {
    const term = fakeTerminal();
    const display = new ProgressDisplay(term.stream);
    // 2,000 of 10,000 records in 10 s: 8,000 more at that pace is 40 s.
    display.update(progress({ records: 2000, pages: 10, expected: 10_000, startedAtMs: Date.now() - 9800 }));
    vi.advanceTimersByTime(200);
    expect(term.fresh()).toMatch(/deals .* 10\.0s +ETA 40\.0s/);
    display.stop();
  });

  it('shows "ETA —" when nothing says how many records to expect', () => {
    const term = fakeTerminal();
    const display = new ProgressDisplay(term.stream);
    display.update(progress({ records: 2000, pages: 10, startedAtMs: Date.now() - 9800 }));
    vi.advanceTimersByTime(200);
    const frame = term.fresh();
    expect(frame).toMatch(/deals .* 10\.0s +ETA —/);
    expect(frame).not.toMatch(/ETA \d/);
    display.stop();
  });

  it('drops the ETA once more records came than expected', () => {
    const term = fakeTerminal();
    const display = new ProgressDisplay(term.stream);
    display.update(progress({ records: 12_000, pages: 60, expected: 10_000, startedAtMs: Date.now() - 9800 }));
    vi.advanceTimersByTime(200);
    const frame = term.fresh();
    expect(frame).toMatch(/ETA —/);
    expect(frame).not.toMatch(/ETA \d/);
    display.stop();
  });

  it('writes its last frame once at stop(), then nothing of the block: not on a tick, a second stop(), nor a log line', () => {
    const term = fakeTerminal();
    const display = new ProgressDisplay(term.stream);
    display.update(progress({ pages: 3, records: 600 }));
    display.update(progress({ phase: 'done', pages: 3, records: 600, written: 600 }));
    display.stop();
    expect(occurrences(term.fresh(), 'deals')).toBe(1);
    vi.advanceTimersByTime(10 * TICK_MS);
    display.stop();
    display.log('WARN after the table');
    expect(term.fresh()).toBe('WARN after the table\n');
  });

  it('ignores a straggling final report after stop(); a new run after it starts a block of its own', () => {
    const term = fakeTerminal();
    const display = new ProgressDisplay(term.stream);
    display.update(progress({ resource: 'contacts', mode: 'incremental', phase: 'done', pages: 4 }));
    display.stop();
    term.fresh();
    display.update(progress({ resource: 'contacts', mode: 'incremental', phase: 'done', pages: 4 }));
    vi.advanceTimersByTime(5 * TICK_MS);
    expect(term.fresh()).toBe('');
    display.update(progress({ resource: 'deals', mode: 'incremental', pages: 1 }));
    vi.advanceTimersByTime(TICK_MS);
    const frame = term.fresh();
    expect(frame).toMatch(/deals/);
    expect(frame).not.toMatch(/contacts/);
    display.stop();
  });

  it('says "1 page", "1 record", "1 request" and "2 pages", grouping every count by thousands', () => {
    const term = fakeTerminal();
    const display = new ProgressDisplay(term.stream);
    display.update(progress({ resource: 'users', mode: 'refresh', pages: 1, records: 1, written: 1, requests: 1 }));
    display.update(progress({ resource: 'deals', mode: 'full', pages: 2, records: 12_345, written: 1_234_567, requests: 2 }));
    vi.advanceTimersByTime(200);
    const frame = term.fresh();
    expect(frame).toMatch(/users .* 1 page(?!s) .* 1 record(?!s) .* 1 written .* 1 request(?!s) /);
    expect(frame).toMatch(/deals .* 2 pages .* 12,345 records .* 1,234,567 written .* 2 requests/);
    expect(frame).not.toMatch(/\b1 (pages|records|requests)\b/);
    display.stop();
  });

  it('adds a total line: pages, records and requests summed, with the overall rate and elapsed time', () => {
    const term = fakeTerminal();
    const display = new ProgressDisplay(term.stream);
    const startedAtMs = Date.now();
    display.update(progress({ resource: 'deals', pages: 2, records: 400, requests: 3, startedAtMs }));
    display.update(progress({ resource: 'contacts', pages: 5, records: 1000, requests: 6, startedAtMs }));
    vi.advanceTimersByTime(TICK_MS);
    // 9 requests in 1 s.
    expect(term.fresh()).toMatch(/total +0\/2 done +7 pages +1,400 records .* 9 requests +540 req\/min +1\.0s/);
    display.stop();
  });

  it('gives a summaries refresh of meeting logs its own line beside the walk of them', () => {
    const term = fakeTerminal();
    const display = new ProgressDisplay(term.stream);
    display.update(progress({ resource: 'meeting-logs', mode: 'incremental', phase: 'done', pages: 1, records: 120 }));
    display.update(progress({ resource: 'meeting-logs', mode: 'summaries', records: 3, expected: 40 }));
    display.stop();
    const frame = term.fresh();
    expect(frame).toMatch(/meeting-logs +incremental +done +1 page +120 records/);
    expect(frame).toMatch(/meeting-logs +summaries +walking +0 pages +3 records/);
  });

  it('writes nothing of the block to a stream that is not a terminal; log lines still pass', () => {
    const term = fakeTerminal(false);
    const display = new ProgressDisplay(term.stream);
    display.update(progress({ pages: 3 }));
    vi.advanceTimersByTime(5 * TICK_MS);
    display.log('a log line');
    display.stop();
    expect(term.all()).toBe('a log line\n');
  });
});

describe('BackfillProgressLine', () => {
  it('ticks every second, says "1 page", and draws nothing after stop()', () => {
    const term = fakeTerminal();
    const line = new BackfillProgressLine(term.stream, 10_000, 1000);
    line.update(progress({ pages: 1, records: 200, requests: 1 }));
    expect(term.fresh()).toMatch(/deals backfill walking .*1 page, 200 records, 0 written, 1 request, .*ETA/);
    vi.advanceTimersByTime(TICK_MS);
    expect(term.fresh()).toMatch(/1\.0s, ETA/);
    line.stop();
    vi.advanceTimersByTime(5 * TICK_MS);
    line.update(progress({ pages: 2 }));
    line.stop();
    expect(term.fresh()).toBe('');
  });
});

describe('estimateBackfill', () => {
  it('gives no ETA once the window brought as many records as expected, and never one past the cap', () => {
    expect(estimateBackfill({ pages: 50, records: 10_000, recordsBefore: 0, requests: 50 }, 60_000, 10_000, 1000).etaMs).toBeNull();
    expect(estimateBackfill({ pages: 60, records: 12_000, recordsBefore: 0, requests: 60 }, 60_000, 10_000, 1000)).toEqual({
      etaMs: null,
      fraction: 1,
    });
    expect(estimateBackfill({ pages: 1, records: 1, recordsBefore: 0, requests: 1 }, 60_000, 1_000_000_000, 1000).etaMs).toBe(MAX_ETA_MS);
  });

  it("counts a resumed backfill on from the records its earlier runs received, at this run's pace", () => {
    // 6,000 of 10,000 before; 2,000 in this run's first minute: 2,000 left at 2,000 a minute.
    expect(estimateBackfill({ pages: 10, records: 2000, recordsBefore: 6000, requests: 10 }, 60_000, 10_000, 1000)).toEqual({
      etaMs: 60_000,
      fraction: 0.8,
    });
    expect(estimateBackfill({ pages: 10, records: 2000, recordsBefore: 8000, requests: 10 }, 60_000, 10_000, 1000)).toEqual({
      etaMs: null,
      fraction: 1,
    });
  });
});

describe('estimateRemainingMs', () => {
  it('extrapolates the pace so far to the records still expected', () => {
    expect(estimateRemainingMs(2000, 10_000, 10_000)).toBe(40_000);
  });

  it("counts a resumed walk's earlier records as received, and takes the pace from this run's alone", () => {
    expect(estimateRemainingMs(2000, 10_000, 10_000, 6000)).toBe(10_000);
    expect(estimateRemainingMs(2000, 10_000, 10_000, 8000)).toBeNull();
  });

  it('is null without an expected count, before the first record, and once the expected count is reached or passed', () => {
    expect(estimateRemainingMs(2000, undefined, 10_000)).toBeNull();
    expect(estimateRemainingMs(2000, null, 10_000)).toBeNull();
    expect(estimateRemainingMs(2000, 0, 10_000)).toBeNull();
    expect(estimateRemainingMs(0, 10_000, 10_000)).toBeNull();
    expect(estimateRemainingMs(10_000, 10_000, 10_000)).toBeNull();
    expect(estimateRemainingMs(12_000, 10_000, 10_000)).toBeNull();
  });

  it('is never negative, and capped at MAX_ETA_MS when the pace is a crawl', () => {
    expect(estimateRemainingMs(1, 1_000_000, 60_000)).toBe(MAX_ETA_MS);
    expect(estimateRemainingMs(5, 10, -1)).toBeNull();
  });
});

describe('expectedRecords', () => {
  const run = (over: Partial<RunRow>): RunRow => ({
    runId: 'r',
    resource: 'deals',
    mode: 'incremental',
    startedAt: new Date(),
    outcome: 'succeeded',
    records: 0,
    ...over,
  });
  const warehouse = (runs: RunRow[] = []) => ({
    tableCounts: async () => ({ deals: 5000, meeting_logs: 120 }),
    recentRuns: async () => runs,
  });

  it("expects the table's live rows from a walk of the whole list (a full sync, a sweep, a first sync)", async () => {
    expect(await expectedRecords(warehouse(), 'deals', 'full', { updatedAfter: null })).toBe(5000);
    expect(await expectedRecords(warehouse(), 'meeting-logs', 'reconcile', { updatedAfter: null })).toBe(120);
    expect(await expectedRecords(warehouse(), 'contacts', 'incremental', { updatedAfter: null })).toBeUndefined();
  });

  it('expects what the previous successful incremental sync of the resource wrote', async () => {
    const runs = [
      run({ outcome: 'running', records: 0 }),
      run({ resource: 'contacts', records: 99 }),
      run({ outcome: 'failed', records: 7 }),
      run({ records: 42 }),
      run({ records: 1000 }),
    ];
    expect(await expectedRecords(warehouse(runs), 'deals', 'incremental', { updatedAfter: '2025-01-01T00:00:00Z' })).toBe(42);
  });

  it('expects nothing of an incremental sync after one that wrote the whole table (the first sync walks the whole list)', async () => {
    const afterFirstSync = warehouse([run({ records: 5000 })]);
    expect(await expectedRecords(afterFirstSync, 'deals', 'incremental', { updatedAfter: '2025-01-01T00:00:00Z' })).toBeUndefined();
  });

  it('expects nothing of a backfill window, or a warehouse that cannot say', async () => {
    expect(
      await expectedRecords(warehouse([run({ records: 42 })]), 'deals', 'backfill', {
        updatedAfter: '2025-01-01T00:00:00Z',
      }),
    ).toBeUndefined();
    const broken = { tableCounts: () => Promise.reject(new Error('locked')), recentRuns: () => Promise.reject(new Error('locked')) };
    expect(await expectedRecords(broken, 'deals', 'full', { updatedAfter: null })).toBeUndefined();
  });
});

describe('formatCount', () => {
  it('agrees in number and groups by thousands', () => {
    expect(formatCount(1, 'page')).toBe('1 page');
    expect(formatCount(0, 'page')).toBe('0 pages');
    expect(formatCount(12_345, 'record')).toBe('12,345 records');
    expect(formatCount(1, 'company', 'companies')).toBe('1 company');
    expect(formatCount(2, 'company', 'companies')).toBe('2 companies');
  });
});
