import { setMaxListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AcquireOptions, RateLane } from '../../src/core/rate-limiter.js';
import {
  gcraLimitAvailable,
  gcraParams,
  gcraTake,
  gcraWait,
  gcraYielding,
  TokenBucketLimiter,
  type GcraParams,
} from '../../src/limiter/index.js';

/**
 * Sends as fast as the buckets allow over `minutes` of simulated time; returns send times. `view` is how the
 * sender sees the bucket (gcraYielding: a request beyond its lane's share).
 */
function drive(perMinute: number, burst: number, minutes: number, view = (p: GcraParams) => p): number[] {
  const bucket = gcraParams(perMinute, burst);
  const params = view(bucket);
  let state = { tat: 0 };
  let now = 0;
  const sent: number[] = [];
  while (now < minutes * 60_000) {
    const wait = gcraWait(state, params, now);
    if (wait > 0) {
      now += wait;
      continue;
    }
    state = gcraTake(state, bucket, now);
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

  it('lets a yielding request keep the full rate alone, never past the limit', () => {
    const sent = drive(1000, 10, 5, gcraYielding);
    expect(sent.length / 5).toBeGreaterThanOrEqual(980);
    expect(maxInAnyWindow(sent, 60_000)).toBeLessThanOrEqual(1000);
  });

  it('leaves half the burst to whoever stands level when a yielding request has taken all it may', () => {
    const params = gcraParams(1000, 10);
    let state = { tat: 0 };
    let yielded = 0;
    while (gcraWait(state, gcraYielding(params), 1_000_000) === 0) {
      state = gcraTake(state, params, 1_000_000);
      yielded += 1;
    }
    let level = 0;
    while (gcraWait(state, params, 1_000_000) === 0) {
      state = gcraTake(state, params, 1_000_000);
      level += 1;
    }
    expect([yielded, level]).toEqual([5, 5]);
    // And a yielding request waits for the level one to be served first: half a burst of intervals later.
    expect(gcraWait(state, gcraYielding(params), 1_000_000) - gcraWait(state, params, 1_000_000)).toBeCloseTo(5 * params.intervalMs, 6);
  });

  it('keeps nothing back from a yielding request when the burst is 1: there is nothing to keep', () => {
    expect(gcraYielding(gcraParams(1000, 1))).toEqual(gcraParams(1000, 1));
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

/** One kind of caller for driveLimiter. */
interface Client {
  keys: string[];
  lane?: RateLane;
  /** Acquire loops running at once. @defaultValue 4 */
  inFlight?: number;
  /** When it starts asking, in simulated ms. @defaultValue 0 */
  fromMs?: number;
  /** When it stops asking (goes quiet). @defaultValue the whole run */
  untilMs?: number;
  /** Pause after each grant, per loop: a caller that wants only so much. @defaultValue 0 */
  everyMs?: number;
  /** AcquireOptions.poolKeys. @defaultValue none given */
  poolKeys?: number;
}

/**
 * Drives `limiter` under fake timers: each client loops acquire → record (→ pause `everyMs`) from `fromMs` to
 * `untilMs` of simulated time, as many loops as it has `inFlight`. Returns every grant with its simulated time.
 */
async function driveLimiter(
  limiter: TokenBucketLimiter,
  clients: Client[],
  ms: number,
): Promise<Array<{ at: number; keyId: string; lane: RateLane; waitedMs: number }>> {
  const grants: Array<{ at: number; keyId: string; lane: RateLane; waitedMs: number }> = [];
  const started = Date.now();
  // Cut short when the caller stops, so no loop is left sleeping past the end of the simulated time.
  const sleep = (delay: number, stop: AbortSignal) =>
    new Promise<void>((resolve) => {
      // The listener goes with the sleep: one left per sleep would pile up on the client's signal.
      const onAbort = () => (clearTimeout(timer), resolve());
      const timer = setTimeout(() => (stop.removeEventListener('abort', onAbort), resolve()), delay);
      stop.addEventListener('abort', onAbort, { once: true });
    });
  const loops = clients.flatMap((client) => {
    // A faked timer (AbortSignal.timeout runs on a real one), and the end of the run stops it at the latest.
    const controller = new AbortController();
    const stop = controller.signal;
    // Each loop waits on it in the limiter or in a sleep at a time, as a sync's fan-out does (`fanOut`).
    setMaxListeners((client.inFlight ?? 4) + 10, stop);
    setTimeout(() => controller.abort(new Error('quiet')), Math.min(client.untilMs ?? ms, ms));
    return Array.from({ length: client.inFlight ?? 4 }, async () => {
      if (client.fromMs) await sleep(client.fromMs, stop);
      while (!stop.aborted) {
        const grant = await limiter.acquire(client.keys, { lane: client.lane, signal: stop, poolKeys: client.poolKeys }).catch(() => null);
        if (!grant) return;
        grants.push({ at: Date.now() - started, keyId: grant.keyId, lane: client.lane ?? 'sync', waitedMs: grant.waitedMs });
        if (client.everyMs) await sleep(client.everyMs, stop);
      }
    });
  });
  await vi.advanceTimersByTimeAsync(ms);
  await Promise.all(loops);
  return grants.filter((g) => g.at < ms);
}

/**
 * Under fake timers: asks `limiter` with `options` until a request is not granted at once, then asks a sync request
 * behind it. `taken`: the requests granted at once; `levelWentFirst`: the sync request went while the other waited.
 */
async function levelBehindAWaiter(
  limiter: TokenBucketLimiter,
  options: AcquireOptions,
): Promise<{ taken: number; levelWentFirst: boolean }> {
  let taken = 0;
  let waiterDone = false;
  let waiter: Promise<unknown> = Promise.resolve();
  do {
    if (waiterDone) taken += 1;
    waiterDone = false;
    waiter = limiter.acquire(['a'], options).then(() => (waiterDone = true));
    await vi.advanceTimersByTimeAsync(0);
  } while (waiterDone);
  let levelDone = false;
  const level = limiter.acquire(['a']).then(() => (levelDone = true));
  await vi.advanceTimersByTimeAsync(0);
  const levelWentFirst = levelDone && !waiterDone;
  await vi.advanceTimersByTimeAsync(20_000);
  await Promise.all([level, waiter]);
  return { taken, levelWentFirst };
}

/** Grants of `lane` in [fromMs, toMs). */
function between(grants: Array<{ at: number; lane: RateLane }>, lane: RateLane, fromMs: number, toMs: number): number {
  return grants.filter((g) => g.lane === lane && g.at >= fromMs && g.at < toMs).length;
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
    expect(
      maxInAnyWindow(
        grants.filter((g) => g.keyId === 'a').map((g) => g.at),
        60_000,
      ),
    ).toBeLessThanOrEqual(600);
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
    expect(
      maxInAnyWindow(
        grants.map((g) => g.at),
        60_000,
      ),
    ).toBeLessThanOrEqual(900);
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
    expect(
      maxInAnyWindow(
        grants.map((g) => g.at),
        60_000,
      ),
    ).toBeLessThanOrEqual(1200);
  });

  it('lets a backfill running alone use the whole budget, not only its share', async () => {
    const limiter = new TokenBucketLimiter({
      perKeyPerMinute: 10_000,
      perOrgPerMinute: 1200,
      laneShares: { backfill: 0.25 },
      now: () => Date.now(),
    });
    const grants = await driveLimiter(limiter, [{ keys: ['a', 'b'], lane: 'backfill', inFlight: 8 }], 120_000);
    // The organization's 1190/min sustained (1200 less the burst), not the share's 300.
    expect(grants.length / 2).toBeGreaterThanOrEqual(1180);
    expect(
      maxInAnyWindow(
        grants.map((g) => g.at),
        60_000,
      ),
    ).toBeLessThanOrEqual(1200);
  });

  it('lets a summaries sweep (reconcile --deep) running alone use the whole of its one key', async () => {
    // The issue's case: 247/min on a 1000/min key, held to the summaries' quarter with nothing else running.
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 1000, perOrgPerMinute: 5000, now: () => Date.now() });
    const grants = await driveLimiter(limiter, [{ keys: ['a'], lane: 'summaries', inFlight: 8 }], 60_000);
    expect(grants.length).toBeGreaterThanOrEqual(980);
    expect(grants.length).toBeLessThanOrEqual(1000);
  });

  it('keeps backfill and summaries each their share when both want more, and lets them split the rest', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 10_000, perOrgPerMinute: 1200, now: () => Date.now() });
    // Summaries with half the loops of the backfill: a plain first-come split would give it a third, not less.
    const grants = await driveLimiter(
      limiter,
      [
        { keys: ['a'], lane: 'backfill', inFlight: 8 },
        { keys: ['a'], lane: 'summaries', inFlight: 2 },
      ],
      60_000,
    );
    const byLane = countBy(grants, (g) => g.lane);
    expect(byLane.backfill).toBeGreaterThanOrEqual(0.5 * 1200 - 15);
    expect(byLane.summaries).toBeGreaterThanOrEqual(0.25 * 1200 - 15);
    expect(byLane.backfill! + byLane.summaries!).toBeGreaterThanOrEqual(1180);
    expect(
      maxInAnyWindow(
        grants.map((g) => g.at),
        60_000,
      ),
    ).toBeLessThanOrEqual(1200);
  });

  it('gives way to a sync at once: its first requests beside a busy backfill wait for nothing', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 10_000, perOrgPerMinute: 1200, now: () => Date.now() });
    const backfill = driveLimiter(limiter, [{ keys: ['a'], lane: 'backfill', inFlight: 8 }], 20_000);
    await vi.advanceTimersByTimeAsync(10_000);
    // The backfill has been running flat out for 10 s: still, half the burst is there for the schedule.
    const first = await Promise.all(Array.from({ length: 5 }, () => limiter.acquire(['a'])));
    expect(first.map((g) => g.waitedMs)).toEqual([0, 0, 0, 0, 0]);
    await backfill;
  });

  it('holds a backfill to its share while sync asks, and gives it the whole budget back as soon as sync goes quiet', async () => {
    const limiter = new TokenBucketLimiter({
      perKeyPerMinute: 10_000,
      perOrgPerMinute: 1200,
      laneShares: { backfill: 0.25 },
      now: () => Date.now(),
    });
    const grants = await driveLimiter(
      limiter,
      [
        { keys: ['a'], lane: 'backfill', inFlight: 8 },
        { keys: ['a'], fromMs: 30_000, untilMs: 90_000 },
      ],
      150_000,
    );
    // Alone: the whole 1190/min. Beside sync: its 300/min share (the lane's own burst of 10 on top, at most).
    expect(between(grants, 'backfill', 0, 30_000)).toBeGreaterThanOrEqual(580);
    expect(between(grants, 'backfill', 30_000, 90_000)).toBeLessThanOrEqual(300 + 10);
    expect(between(grants, 'sync', 30_000, 90_000)).toBeGreaterThanOrEqual(0.75 * 1200 - 15);
    // Quiet from 90 s: within a second the backfill runs at the whole rate again.
    expect(between(grants, 'backfill', 91_000, 150_000)).toBeGreaterThanOrEqual((59 / 60) * 1190 - 5);
  });

  it('lets a backfill take whatever a light sync leaves, and the light sync never waits', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 10_000, perOrgPerMinute: 1200, now: () => Date.now() });
    // Sync wants 60/min (one loop, a request a second): the backfill may use the other 1130, far past its half.
    const grants = await driveLimiter(
      limiter,
      [
        { keys: ['a'], lane: 'backfill', inFlight: 8 },
        { keys: ['a'], inFlight: 1, everyMs: 1000 },
      ],
      60_000,
    );
    const byLane = countBy(grants, (g) => g.lane);
    expect(byLane.sync).toBeGreaterThanOrEqual(59);
    expect(Math.max(...grants.filter((g) => g.lane === 'sync').map((g) => g.waitedMs))).toBe(0);
    expect(byLane.backfill).toBeGreaterThanOrEqual(1190 - 60 - 15);
    expect(
      maxInAnyWindow(
        grants.map((g) => g.at),
        60_000,
      ),
    ).toBeLessThanOrEqual(1200);
  });

  it("figures a backfill's share of the whole pool when each of its pages may go out on its cursor's key only", async () => {
    // Five keys at 1000/min: the backfill's half is 2500/min. Its walks' cursors each bound to one key (each asks
    // with that key alone) must not shrink it to half of one key's 1000.
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 1000, perOrgPerMinute: 5000, now: () => Date.now() });
    const pool = ['a', 'b', 'c', 'd', 'e'];
    const grants = await driveLimiter(
      limiter,
      [...pool.map((key) => ({ keys: [key], lane: 'backfill' as const, inFlight: 2, poolKeys: pool.length })), { keys: pool, inFlight: 8 }],
      60_000,
    );
    const byLane = countBy(grants, (g) => g.lane);
    expect(byLane.backfill).toBeGreaterThanOrEqual(0.9 * 2500);
    expect(byLane.backfill).toBeLessThanOrEqual(2500 + 60);
    expect(byLane.sync).toBeGreaterThanOrEqual(0.9 * 2500);
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
    const limiter = new TokenBucketLimiter({
      perKeyPerMinute: 10_000,
      perOrgPerMinute: 1200,
      laneShares: { backfill: 0.005 },
      now: () => Date.now(),
    });
    // Every token a backfill may take now (its share's burst of 3, then what it may of the organization's).
    const { taken, levelWentFirst } = await levelBehindAWaiter(limiter, { lane: 'backfill' });
    expect(taken).toBeGreaterThanOrEqual(3);
    expect(levelWentFirst).toBe(true);
  });

  it('never lets a waiting yielding request hold back a level request of its lane behind it', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 10_000, perOrgPerMinute: 1200, now: () => Date.now() });
    // Yielding requests take what they may of the burst (half of it), then one waits.
    const { taken, levelWentFirst } = await levelBehindAWaiter(limiter, { yielding: true });
    expect(taken).toBeGreaterThanOrEqual(3);
    expect(taken).toBeLessThanOrEqual(5);
    expect(levelWentFirst).toBe(true);
  });

  it('serves one lane first come, first served', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 120, perOrgPerMinute: 100_000, burst: 1, now: () => Date.now() });
    const order: number[] = [];
    const waits = [0, 1, 2, 3].map((n) => limiter.acquire(['a']).then(() => order.push(n)));
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it('slows a key to the limit its answers announce, and back to ours once they announce ours again', async () => {
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 600, perOrgPerMinute: 100_000, burst: 1, now: () => Date.now() });
    const perTenSeconds = async () => (await driveLimiter(limiter, [{ keys: ['a'], inFlight: 4 }], 10_000)).length;
    expect(await perTenSeconds()).toBeGreaterThanOrEqual(90);
    limiter.observe('a', { limit: 60 });
    expect(await perTenSeconds()).toBeLessThanOrEqual(11);
    // The window that lowered it has passed: the service announces more than ours, and ours governs again.
    limiter.observe('a', { limit: 1000 });
    expect(await perTenSeconds()).toBeGreaterThanOrEqual(85);
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
