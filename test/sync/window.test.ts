import { describe, expect, it } from 'vitest';
import { backlogCap, grownBatchRows, nextConfirmFrom, nextWatermark, passPageSize, planWalk, shouldFlush } from '../../src/sync/window.js';

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
      resumedFrom: walk,
      resumed: true,
    });
  });

  it('starts an incremental walk one lookback before where the last walk must be listed again from, when that is earlier', () => {
    const confirmFrom = '2026-03-01T09:00:00Z';
    expect(planWalk({ watermark, walk: null, confirmFrom }, 'incremental', 5 * 60_000)).toMatchObject({
      updatedAfter: '2026-03-01T08:55:00.000000Z',
    });
    // One later than the watermark (a clock corrected backwards) never narrows the window.
    expect(planWalk({ watermark, walk: null, confirmFrom: '2026-03-02T00:00:00Z' }, 'incremental', 0)).toMatchObject({
      updatedAfter: '2026-03-01T10:00:00.000000Z',
    });
    expect(planWalk({ watermark, walk: null, confirmFrom }, 'full', 0)).toMatchObject({ updatedAfter: null });
  });

  it('does not resume a walk of another mode: its cursor belongs to another query', () => {
    const walk = { cursor: 'c42', updatedAfter: null, startedAt: '2026-03-01T11:00:00Z', mode: 'full' as const };
    expect(planWalk({ watermark, walk }, 'incremental', 0)).toMatchObject({
      resumed: false,
      after: null,
      updatedAfter: '2026-03-01T10:00:00.000000Z',
    });
  });
});

describe('nextConfirmFrom', () => {
  const previous = '2026-03-01T09:00:00Z';

  it('has the next walk list again an incremental window this one listed over more than one page, from where this one started', () => {
    expect(nextConfirmFrom({ updatedAfter: '2026-03-01T08:55:00Z', passPages: 2, previous })).toBe(previous);
    expect(nextConfirmFrom({ updatedAfter: '2026-03-01T08:55:00Z', passPages: 9, previous })).toBe(previous);
  });

  it('has nothing listed again after a window of one page (no page to shift), or after a full walk (the reconcile checks it)', () => {
    expect(nextConfirmFrom({ updatedAfter: '2026-03-01T08:55:00Z', passPages: 1, previous })).toBeNull();
    expect(nextConfirmFrom({ updatedAfter: '2026-03-01T08:55:00Z', passPages: 0, previous })).toBeNull();
    expect(nextConfirmFrom({ updatedAfter: null, passPages: 50, previous: null })).toBeNull();
  });
});

describe('nextWatermark', () => {
  const pass = { passStartedAt: '2026-03-01T11:00:00Z', maxUpdatedAt: '2026-03-01T10:59:30.123456Z', localClock: false };

  it('is the smaller of the pass start and the largest updated_at received: a Date header ahead of the records cannot skip them', () => {
    // The Date header a day ahead: the largest updated_at the pass received bounds the watermark.
    expect(nextWatermark(null, { ...pass, passStartedAt: '2026-03-02T11:00:00Z' })).toBe('2026-03-01T10:59:30.123456Z');
  });

  it('is the pass start, not the largest updated_at, when records changed after the pass began (the classic max-seen bug)', () => {
    // A record updated mid-walk ahead of the cursor has a later updated_at than one updated behind it.
    expect(nextWatermark(null, { ...pass, maxUpdatedAt: '2026-03-01T11:00:05Z' })).toBe('2026-03-01T11:00:00Z');
  });

  it('keeps the previous watermark when the pass received nothing: an empty answer says nothing about the clock', () => {
    expect(nextWatermark('2026-03-01T09:00:00Z', { ...pass, maxUpdatedAt: null })).toBe('2026-03-01T09:00:00Z');
    expect(nextWatermark(null, { ...pass, maxUpdatedAt: null })).toBeNull();
  });

  it('never moves back behind a previous watermark that is not ahead of the service clock', () => {
    expect(nextWatermark('2026-03-01T10:59:50Z', pass)).toBe('2026-03-01T10:59:50Z');
  });

  it('replaces a previous watermark ahead of the service clock (left by a lying Date header)', () => {
    expect(nextWatermark('2026-03-02T11:00:00Z', pass)).toBe('2026-03-01T10:59:30.123456Z');
  });

  it('holds a watermark placed on the local clock back by a margin', () => {
    expect(nextWatermark(null, { ...pass, maxUpdatedAt: '2026-03-01T11:30:00Z', localClock: true })).toBe('2026-03-01T10:55:00.000000Z');
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
  it('while the writer is busy, grows the batch to its grown size whatever its age, and still commits at the end', () => {
    const growing = { ...policy, maxGrownRows: 5000 };
    expect(shouldFlush(1000, 60_000, false, growing, true)).toBe(false);
    expect(shouldFlush(4999, 0, false, growing, true)).toBe(false);
    expect(shouldFlush(5000, 0, false, growing, true)).toBe(true);
    expect(shouldFlush(10, 0, true, growing, true)).toBe(true);
    expect(shouldFlush(1000, 0, false, growing, false)).toBe(true);
  });
});

describe('grownBatchRows', () => {
  it('lets a narrow table grow to about two row groups (32 times the flush size), a wider one less, never below the flush size', () => {
    expect(grownBatchRows(2000, 17)).toBe(64_000);
    expect(grownBatchRows(2000, 20)).toBe(64_000);
    expect(grownBatchRows(2000, 32)).toBe(40_000);
    expect(grownBatchRows(2000, 64)).toBe(20_000);
    expect(grownBatchRows(2000, 160)).toBe(8000);
    expect(grownBatchRows(2000, 640)).toBe(2000);
    expect(grownBatchRows(2000, 2000)).toBe(2000);
    expect(grownBatchRows(2000, 0)).toBe(64_000);
  });

  it("grows no batch past two of the writer's row groups, however large the flush size, nor below the flush size", () => {
    expect(grownBatchRows(10_000, 17)).toBe(65_536);
    expect(grownBatchRows(100_000, 17)).toBe(100_000);
  });
});

describe('backlogCap', () => {
  it('lets the walks of a process queue three grown batches for the writer between them, as one walk may alone', () => {
    expect(backlogCap(2000, 20)).toBe(192_000);
    expect(backlogCap(2000, 2000)).toBe(6000);
  });
});

describe('passPageSize', () => {
  it('asks for the largest page on a first pass, and moves every boundary on each pass after it', () => {
    expect(passPageSize(1)).toBe(200);
    const sizes = [2, 3, 4].map((pass) => passPageSize(pass));
    expect(new Set([200, ...sizes]).size).toBe(4);
    for (const size of sizes) expect(size).toBeLessThan(200);
    expect(passPageSize(1_000)).toBe(1);
  });

  it('steps down from the page the service serves when it serves fewer than asked, so the boundaries still move', () => {
    expect([1, 2, 3].map((pass) => passPageSize(pass, 100))).toEqual([100, 93, 86]);
    expect(passPageSize(2, 500)).toBe(passPageSize(2));
    expect(passPageSize(50, 100)).toBe(1);
  });
});
