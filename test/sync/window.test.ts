import { describe, expect, it } from 'vitest';
import { nextWatermark, planWalk, shouldFlush } from '../../src/sync/window.js';

const watermark = '2026-03-01T10:00:00Z';

describe('planWalk', () => {
  it('starts an incremental walk one lookback before the watermark', () => {
    const plan = planWalk({ watermark, walk: null }, 'incremental', 5 * 60_000);
    expect(plan).toMatchObject({ updatedAfter: '2026-03-01T09:55:00.000000Z', after: null, resumed: false });
  });

  it('walks everything on the first run, when there is no watermark yet', () => {
    expect(planWalk({ watermark: null, walk: null }, 'incremental', 60_000)).toMatchObject({ updatedAfter: null, after: null });
  });

  it('ignores the watermark for a full walk', () => {
    expect(planWalk({ watermark, walk: null }, 'full', 60_000)).toMatchObject({ updatedAfter: null, resumed: false });
  });

  it('resumes an interrupted walk with its own cursor, window and start time', () => {
    const walk = { cursor: 'c42', updatedAfter: '2026-02-01T00:00:00Z', startedAt: '2026-03-01T11:00:00Z', mode: 'incremental' as const };
    expect(planWalk({ watermark, walk }, 'incremental', 60_000)).toEqual({
      mode: 'incremental',
      updatedAfter: '2026-02-01T00:00:00Z',
      after: 'c42',
      startedAt: '2026-03-01T11:00:00Z',
      resumed: true,
    });
  });

  it('does not resume a walk of another mode: its cursor belongs to another query', () => {
    const walk = { cursor: 'c42', updatedAfter: null, startedAt: '2026-03-01T11:00:00Z', mode: 'full' as const };
    expect(planWalk({ watermark, walk }, 'incremental', 0)).toMatchObject({ resumed: false, after: null, updatedAfter: '2026-03-01T10:00:00.000000Z' });
  });
});

describe('nextWatermark', () => {
  it('is the server time the walk started, not anything seen during it', () => {
    expect(nextWatermark('2026-03-01T11:00:00Z')).toBe('2026-03-01T11:00:00Z');
  });
});

describe('shouldFlush', () => {
  const policy = { maxRows: 1000, maxAgeMs: 5000 };
  it('commits once enough rows are buffered', () => {
    expect(shouldFlush(999, 0, false, policy)).toBe(false);
    expect(shouldFlush(1000, 0, false, policy)).toBe(true);
  });
  it('commits when the oldest buffered page has waited long enough', () => {
    expect(shouldFlush(10, 5000, false, policy)).toBe(true);
  });
  it('always commits at the end of a walk, even with nothing buffered (the watermark must move)', () => {
    expect(shouldFlush(0, 0, true, policy)).toBe(true);
  });
  it('never commits an empty buffer mid-walk', () => {
    expect(shouldFlush(0, 60_000, false, policy)).toBe(false);
  });
});
