import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RateLane } from '../../src/core/rate-limiter.js';
import { gcraLimitAvailable, gcraParams, gcraTake, gcraWait, TokenBucketLimiter } from '../../src/limiter/index.js';

/** Sends as fast as the buckets allow over `minutes` of simulated time; returns send times. */
function drive(perMinute: number, burst: number, minutes: number): number[] {
  const params = gcraParams(perMinute, burst);
  let state = { tat: 0 };
  let now = 0;
  const sent: number[] = [];
  while (now < minutes * 60_000) {
    const wait = gcraWait(state, params, now);
    if (wait > 0) {
      now += wait;
      continue;
    }
    state = gcraTake(state, params, now);
    sent.push(now);
  }
  return sent;
}

function maxInAnyWindow(times: number[], windowMs: number): number {
  let max = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while ((times[end] ?? 0) - (times[start] ?? 0) >= windowMs) start++;
    max = Math.max(max, end - start + 1);
  }
  return max;
}

describe('GCRA token bucket', () => {
  it('never lets any 60-second window hold more than the limit, burst included', () => {
    const sent = drive(1000, 10, 5);
    expect(maxInAnyWindow(sent, 60_000)).toBeLessThanOrEqual(1000);
  });

  it('uses at least 98% of the limit when driven flat out', () => {
    const sent = drive(1000, 10, 5);
    expect(sent.length / 5).toBeGreaterThanOrEqual(980);
  });

  it('lets exactly `remaining` requests through at once after the server reports that few left', () => {
    const params = gcraParams(1000, 10);
    let state = gcraLimitAvailable({ tat: 0 }, params, 1_000_000, 4);
    let sent = 0;
    while (gcraWait(state, params, 1_000_000) === 0) {
      state = gcraTake(state, params, 1_000_000);
      sent += 1;
    }
    expect(sent).toBe(4);
    // Never loosens: a larger remaining leaves an emptier bucket as it is.
    expect(gcraLimitAvailable(state, params, 1_000_000, 9)).toEqual(state);
  });

  it('lets a burst through at once after an idle spell', () => {
    const params = gcraParams(1000, 10);
    let state = { tat: 0 };
    for (let i = 0; i < 10; i++) {
      expect(gcraWait(state, params, 1_000_000)).toBe(0);
      state = gcraTake(state, params, 1_000_000);
    }
    expect(gcraWait(state, params, 1_000_000)).toBeGreaterThan(0);
  });
});

describe('TokenBucketLimiter', () => {
  it('holds every key back while a 429 pause lasts', async () => {
    let now = 0;
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 60_000, now: () => now });
    limiter.pause('k', 1000);
    const waited = limiter.acquire(['k']).then((g) => g.waitedMs);
    now = 1000;
    await expect(waited).resolves.toBeGreaterThanOrEqual(0);
  });

  it('pauses until the window resets when the server says nothing remains', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 60_000 });
    limiter.observe('k', { remaining: 0, resetAt: Math.ceil((Date.now() + 300) / 1000) });
    const started = Date.now();
    await limiter.acquire(['k']);
    expect(Date.now()).toBeGreaterThanOrEqual(started + 1);
  });

  it('shares the organization bucket between keys', () => {
    const org = gcraParams(5000, 10);
    const key = gcraParams(1000, 10);
    expect(org.intervalMs).toBeLessThan(key.intervalMs);
  });

  it('stops waiting when aborted', async () => {
    const limiter = new TokenBucketLimiter();
    limiter.pause('k', 60_000);
    const controller = new AbortController();
    const waiting = limiter.acquire(['k'], { signal: controller.signal });
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
  });
});

/**
 * Drives `limiter` under fake timers: each client loops acquire → record for `ms` of simulated time, as
 * many loops as it has `inFlight`. Returns every grant with its simulated time.
 */
async function driveLimiter(
  limiter: TokenBucketLimiter,
  clients: Array<{ keys: string[]; lane?: RateLane; inFlight?: number }>,
  ms: number,
): Promise<Array<{ at: number; keyId: string; lane: RateLane }>> {
  const grants: Array<{ at: number; keyId: string; lane: RateLane }> = [];
  const stop = new AbortController();
  const started = Date.now();
  const loops = clients.flatMap((client) =>
    Array.from({ length: client.inFlight ?? 4 }, async () => {
      for (;;) {
        const grant = await limiter.acquire(client.keys, { lane: client.lane, signal: stop.signal }).catch(() => null);
        if (!grant) return;
        grants.push({ at: Date.now() - started, keyId: grant.keyId, lane: client.lane ?? 'sync' });
      }
    }),
  );
  await vi.advanceTimersByTimeAsync(ms);
  stop.abort(new Error('done'));
  await Promise.all(loops);
  return grants.filter((g) => g.at < ms);
}

describe('TokenBucketLimiter: key pool, organization and lanes', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('spreads a pool over its keys: two keys carry twice the traffic of one', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 600, perOrgPerMinute: 100_000, now: () => Date.now() });
    const grants = await driveLimiter(limiter, [{ keys: ['a', 'b'] }], 60_000);
    const perKey = countBy(grants, (g) => g.keyId);
    expect(perKey.a).toBeGreaterThanOrEqual(590);
    expect(perKey.b).toBeGreaterThanOrEqual(590);
    expect(maxInAnyWindow(grants.filter((g) => g.keyId === 'a').map((g) => g.at), 60_000)).toBeLessThanOrEqual(600);
  });

  it('grants the key whose token comes first, skipping a paused one', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 600, perOrgPerMinute: 100_000, now: () => Date.now() });
    limiter.pause('a', 30_000);
    const grants = await driveLimiter(limiter, [{ keys: ['a', 'b'] }], 10_000);
    expect(new Set(grants.map((g) => g.keyId))).toEqual(new Set(['b']));
  });

  it('caps a pool of keys at the organization limit', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 600, perOrgPerMinute: 900, now: () => Date.now() });
    const grants = await driveLimiter(limiter, [{ keys: ['a', 'b', 'c'] }], 120_000);
    expect(maxInAnyWindow(grants.map((g) => g.at), 60_000)).toBeLessThanOrEqual(900);
    expect(grants.length / 2).toBeGreaterThanOrEqual(880);
  });

  it('holds a backfill to its share of the organization while sync takes the rest', async () => {
    const limiter = new TokenBucketLimiter({
      perKeyPerMinute: 10_000,
      perOrgPerMinute: 1200,
      laneShares: { backfill: 0.25 },
      now: () => Date.now(),
    });
    const grants = await driveLimiter(limiter, [{ keys: ['a', 'b'], lane: 'backfill', inFlight: 8 }, { keys: ['a', 'b'] }], 120_000);
    const byLane = countBy(grants, (g) => g.lane);
    // 300/min for the backfill (its share of 1200), the other 900 for sync: per minute, over two minutes.
    expect(byLane.backfill! / 2).toBeLessThanOrEqual(300);
    expect(byLane.backfill! / 2).toBeGreaterThanOrEqual(285);
    expect(byLane.sync! / 2).toBeGreaterThanOrEqual(870);
    expect(maxInAnyWindow(grants.map((g) => g.at), 60_000)).toBeLessThanOrEqual(1200);
  });

  it('lets a backfill use its whole share when sync is idle, and caps summaries at their default quarter', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 10_000, perOrgPerMinute: 1200, now: () => Date.now() });
    const grants = await driveLimiter(limiter, [{ keys: ['a'], lane: 'backfill' }, { keys: ['a'], lane: 'summaries' }], 60_000);
    const byLane = countBy(grants, (g) => g.lane);
    expect(byLane.backfill).toBeLessThanOrEqual(600);
    expect(byLane.backfill).toBeGreaterThanOrEqual(580);
    expect(byLane.summaries).toBeLessThanOrEqual(300);
    expect(byLane.summaries).toBeGreaterThanOrEqual(280);
  });

  it('reserves the schedule its share even when one key, not the organization, is the limit', async () => {
    // One key at 1000/min against an organization of 5000/min: half of what the key can do is the backfill's.
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 1000, perOrgPerMinute: 5000, now: () => Date.now() });
    const grants = await driveLimiter(limiter, [{ keys: ['a'], lane: 'backfill', inFlight: 8 }, { keys: ['a'] }], 60_000);
    const byLane = countBy(grants, (g) => g.lane);
    expect(byLane.backfill).toBeLessThanOrEqual(500);
    expect(byLane.sync).toBeGreaterThanOrEqual(470);
  });

  it('never lets a waiting backfill hold back a sync request behind it', async () => {
    // 6/min for the backfill: its burst is 3 (half its limit), so 3 grants empty its lane but not the org.
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 10_000, perOrgPerMinute: 1200, laneShares: { backfill: 0.005 }, now: () => Date.now() });
    for (let i = 0; i < 3; i++) await limiter.acquire(['a'], { lane: 'backfill' });
    let backfillDone = false;
    const backfill = limiter.acquire(['a'], { lane: 'backfill' }).then(() => (backfillDone = true));
    const sync = await limiter.acquire(['a']);
    expect(sync.waitedMs).toBe(0);
    expect(backfillDone).toBe(false);
    await vi.advanceTimersByTimeAsync(20_000);
    await backfill;
  });

  it('serves one lane first come, first served', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 120, perOrgPerMinute: 100_000, burst: 1, now: () => Date.now() });
    const order: number[] = [];
    const waits = [0, 1, 2, 3].map((n) => limiter.acquire(['a']).then(() => order.push(n)));
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it('sends no more back to back than the server says remain', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 600, perOrgPerMinute: 100_000, now: () => Date.now() });
    limiter.observe('a', { remaining: 3 });
    const immediate = await driveLimiter(limiter, [{ keys: ['a'], inFlight: 20 }], 50);
    expect(immediate).toHaveLength(3);
  });
});

function countBy<T>(items: T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}
