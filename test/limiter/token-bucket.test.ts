import { describe, expect, it } from 'vitest';
import { gcraParams, gcraTake, gcraWait, TokenBucketLimiter } from '../../src/limiter/index.js';

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
