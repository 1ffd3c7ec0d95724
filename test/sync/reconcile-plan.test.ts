import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { planSweep, reconcileStateKey, summariesWindowStart } from '../../src/sync/index.js';

describe('reconcile sweep plan', () => {
  it('keeps its own state row, apart from the incremental walk', () => {
    expect(reconcileStateKey('meeting-logs')).toBe('meeting-logs#reconcile');
  });

  it('resumes an interrupted sweep from its cursor and start time', () => {
    const walk = { cursor: 'abc', updatedAfter: null, startedAt: '2026-01-01T00:00:00Z', mode: 'full' as const };
    expect(planSweep({ walk })).toEqual({ after: 'abc', startedAt: '2026-01-01T00:00:00Z', resumed: true });
  });

  it('starts afresh when nothing was interrupted, or the stored walk is not a sweep of everything', () => {
    expect(planSweep({ walk: null })).toEqual({ after: null, startedAt: null, resumed: false });
    const windowed = { cursor: 'abc', updatedAfter: '2025-12-01T00:00:00Z', startedAt: '2026-01-01T00:00:00Z', mode: 'incremental' as const };
    expect(planSweep({ walk: windowed }).resumed).toBe(false);
  });
});

describe('summaries window', () => {
  it('counts back from the server time', () => {
    expect(summariesWindowStart('2026-01-15T00:00:00Z', 14 * 86_400_000)).toBe('2026-01-01T00:00:00.000000Z');
  });

  it('is configured by SALESYNC_SUMMARIES_WINDOW and SALESYNC_SUMMARIES_FINAL', () => {
    expect(loadConfig({})).toMatchObject({ summariesWindowMs: 14 * 86_400_000, summariesFinalStatuses: ['completed', 'failed'] });
    expect(loadConfig({ SALESYNC_SUMMARIES_WINDOW: '3d', SALESYNC_SUMMARIES_FINAL: ' completed , failed,skipped ' })).toMatchObject({
      summariesWindowMs: 3 * 86_400_000,
      summariesFinalStatuses: ['completed', 'failed', 'skipped'],
    });
    expect(() => loadConfig({ SALESYNC_SUMMARIES_FINAL: ' , ' })).toThrow(/SALESYNC_SUMMARIES_FINAL/);
  });
});
