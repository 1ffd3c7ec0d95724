import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { deletionsAllowed, planSweep, reconcileStateKey, summariesWindowStart } from '../../src/sync/index.js';

describe('reconcile sweep plan', () => {
  it('keeps its own state row, apart from the incremental walk', () => {
    expect(reconcileStateKey('meeting-logs')).toBe('meeting-logs#reconcile');
  });

  it('resumes an interrupted sweep from its cursor and start time', () => {
    const walk = { cursor: 'abc', updatedAfter: null, startedAt: '2026-01-01T00:00:00Z', mode: 'full' as const };
    expect(planSweep({ walk })).toEqual({ mode: 'full', updatedAfter: null, after: 'abc', resumedFrom: walk, resumed: true });
  });

  it('starts afresh when nothing was interrupted, or the stored walk is not a sweep of everything', () => {
    expect(planSweep({ walk: null })).toEqual({ mode: 'full', updatedAfter: null, after: null, resumedFrom: null, resumed: false });
    const windowed = {
      cursor: 'abc',
      updatedAfter: '2025-12-01T00:00:00Z',
      startedAt: '2026-01-01T00:00:00Z',
      mode: 'incremental' as const,
    };
    expect(planSweep({ walk: windowed }).resumed).toBe(false);
  });
});

describe('deletionsAllowed', () => {
  it('lets a sweep mark up to its share of the live rows, and more only with force', () => {
    expect(deletionsAllowed(10, 100, 0.1, false)).toBe(true);
    expect(deletionsAllowed(11, 100, 0.1, false)).toBe(false);
    expect(deletionsAllowed(11, 100, 0.1, true)).toBe(true);
  });

  it("lets a small table's few deletions through (up to 5), unless the share is 0", () => {
    expect(deletionsAllowed(1, 9, 0.1, false)).toBe(true);
    expect(deletionsAllowed(5, 20, 0.1, false)).toBe(true);
    expect(deletionsAllowed(6, 20, 0.1, false)).toBe(false);
    expect(deletionsAllowed(1, 9, 0, false)).toBe(false);
  });

  it('refuses a sweep that listed nothing of a live table (an empty answer is a fault, not every record deleted)', () => {
    expect(deletionsAllowed(500, 500, 0.1, false)).toBe(false);
    expect(deletionsAllowed(0, 500, 0.1, false)).toBe(true);
  });
});

describe('summaries window', () => {
  it('counts back from the server time', () => {
    expect(summariesWindowStart('2026-01-15T00:00:00Z', 14 * 86_400_000)).toBe('2026-01-01T00:00:00.000000Z');
  });

  it('is configured by SALESYNC_SUMMARIES_WINDOW and SALESYNC_SUMMARIES_FINAL (no final statuses unless declared: settledness is learned)', () => {
    expect(loadConfig({})).toMatchObject({
      summariesWindowMs: 14 * 86_400_000,
      summariesFinalStatuses: null,
      summariesRecheckMs: 3_600_000,
    });
    expect(loadConfig({ SALESYNC_SUMMARIES_WINDOW: '3d', SALESYNC_SUMMARIES_FINAL: ' completed , failed,skipped ' })).toMatchObject({
      summariesWindowMs: 3 * 86_400_000,
      summariesFinalStatuses: ['completed', 'failed', 'skipped'],
    });
    expect(() => loadConfig({ SALESYNC_SUMMARIES_FINAL: ' , ' })).toThrow(/SALESYNC_SUMMARIES_FINAL/);
  });
});
