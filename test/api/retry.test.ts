import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY,
  MAX_RATE_LIMITED_RETRIES,
  decideRetry,
  localResetMs,
  parseRetryAfterMs,
  parseServerDate,
  parseServerDateMs,
  rateLimitedDelayMs,
  retryDelayMs,
  serviceWait,
  waitTooLong,
} from '../../src/api/retry.js';

const delays = { baseDelayMs: 100, maxDelayMs: 1000 };

describe('retryDelayMs', () => {
  it('stays within [0, base · 2^(attempt-1)] for every random draw', () => {
    for (let attempt = 1; attempt <= 4; attempt++) {
      const ceiling = 100 * 2 ** (attempt - 1);
      expect(retryDelayMs(attempt, delays, () => 0)).toBe(0);
      expect(retryDelayMs(attempt, delays, () => 0.999999)).toBeLessThanOrEqual(ceiling);
      expect(retryDelayMs(attempt, delays, () => 0.999999)).toBeGreaterThan(ceiling * 0.99);
    }
  });

  it('doubles its ceiling each attempt', () => {
    const max = (attempt: number) => retryDelayMs(attempt, { baseDelayMs: 100, maxDelayMs: 1e9 }, () => 1);
    expect([1, 2, 3, 4, 5].map(max)).toEqual([100, 200, 400, 800, 1600]);
  });

  it('never exceeds maxDelayMs, even for huge attempt numbers', () => {
    for (const attempt of [5, 10, 100, 5000]) {
      expect(retryDelayMs(attempt, delays, () => 1)).toBe(1000);
    }
  });

  it('uses full jitter: half the draw gives half the ceiling', () => {
    expect(retryDelayMs(3, delays, () => 0.5)).toBe(200);
  });
});

describe('rateLimitedDelayMs', () => {
  it('stays within [ceiling/2, ceiling]: a draw of 0 still waits half the backoff', () => {
    for (let attempt = 1; attempt <= 4; attempt++) {
      const ceiling = 100 * 2 ** (attempt - 1);
      expect(rateLimitedDelayMs(attempt, delays, () => 0)).toBe(ceiling / 2);
      expect(rateLimitedDelayMs(attempt, delays, () => 1)).toBe(ceiling);
    }
    expect(rateLimitedDelayMs(50, delays, () => 0)).toBe(500);
  });
});

describe('parseRetryAfterMs', () => {
  it('reads integer seconds as the spec sends them', () => {
    expect(parseRetryAfterMs('3')).toBe(3000);
    expect(parseRetryAfterMs(' 0 ')).toBe(0);
  });

  it('reads an HTTP date relative to now', () => {
    const now = Date.parse('2024-05-01T00:00:00Z');
    expect(parseRetryAfterMs('Wed, 01 May 2024 00:00:10 GMT', now)).toBe(10_000);
  });

  it('is null when absent or unreadable', () => {
    expect(parseRetryAfterMs(undefined)).toBeNull();
    expect(parseRetryAfterMs('soon')).toBeNull();
  });

  it('reads a past HTTP date as 0, and an HTTP date against the server clock passed as now', () => {
    const server = Date.parse('2024-05-01T00:30:00Z');
    expect(parseRetryAfterMs('Wed, 01 May 2024 00:00:10 GMT', server)).toBe(0);
    expect(parseRetryAfterMs('Wed, 01 May 2024 00:30:10 GMT', server)).toBe(10_000);
  });
});

describe('localResetMs', () => {
  const MIN30 = 30 * 60_000;
  const local = Date.parse('2024-05-01T12:00:00.400Z');

  it('moves a reset on a server clock 30 minutes ahead onto the local clock: 10 s away, not 30 min 10 s', () => {
    const serverDate = parseServerDateMs(new Date(local + MIN30).toUTCString())!;
    const reset = Math.floor((local + MIN30) / 1000) + 10;
    expect(localResetMs(reset, serverDate, local) - local).toBe(10_000);
  });

  it('moves a reset on a server clock 30 minutes behind onto the local clock: 10 s away, not 30 min ago', () => {
    const serverDate = parseServerDateMs(new Date(local - MIN30).toUTCString())!;
    const reset = Math.floor((local - MIN30) / 1000) + 10;
    expect(localResetMs(reset, serverDate, local) - local).toBe(10_000);
  });

  it('errs late, never early, by the sub-second part the Date header drops', () => {
    // The server's true time is 12:00:00.900; its Date says 12:00:00; the reset is at 12:00:05 on its clock.
    const serverTrue = Date.parse('2024-05-01T12:00:00.900Z');
    const serverDate = parseServerDateMs(new Date(serverTrue).toUTCString())!;
    const trueWait = Date.parse('2024-05-01T12:00:05Z') - serverTrue;
    const wait = localResetMs(Date.parse('2024-05-01T12:00:05Z') / 1000, serverDate, local) - local;
    expect(wait).toBeGreaterThanOrEqual(trueWait);
    expect(wait - trueWait).toBeLessThan(1000);
  });
});

describe('serviceWait and waitTooLong', () => {
  const now = 1_000_000;
  const empty = (resetInMs: number) => ({ remaining: 0, resetAt: (now + resetInMs) / 1000 });

  it('takes the longer of Retry-After and the reset of a window reported empty', () => {
    expect(serviceWait(2000, empty(5000), now)).toEqual({ ms: 5000, source: 'X-RateLimit-Reset' });
    expect(serviceWait(9000, empty(5000), now)).toEqual({ ms: 9000, source: 'Retry-After' });
    expect(serviceWait(0, { remaining: 3, resetAt: (now + 5000) / 1000 }, now)).toEqual({ ms: 0, source: 'Retry-After' });
    expect(serviceWait(null, { remaining: 3 }, now)).toBeNull();
    expect(serviceWait(null, empty(-5000), now)).toEqual({ ms: 0, source: 'X-RateLimit-Reset' });
  });

  it('is a wait too long only past maxRetryAfterMs, from either header', () => {
    const options = { maxRetryAfterMs: 120_000 };
    expect(waitTooLong(0, empty(86_400_000), now, options)).toEqual({ ms: 86_400_000, source: 'X-RateLimit-Reset' });
    expect(waitTooLong(3_600_000, {}, now, options)).toEqual({ ms: 3_600_000, source: 'Retry-After' });
    expect(waitTooLong(120_000, empty(120_000), now, options)).toBeNull();
    expect(waitTooLong(null, { remaining: 5, resetAt: (now + 86_400_000) / 1000 }, now, options)).toBeNull();
  });
});

describe('parseServerDate', () => {
  it('converts the Date header to ISO 8601 UTC at second precision', () => {
    expect(parseServerDate('Wed, 01 May 2024 09:30:05 GMT')).toBe('2024-05-01T09:30:05Z');
  });

  it("reads HTTP's obsolete forms as UTC whatever the machine's time zone (asctime names none)", () => {
    const zone = process.env['TZ'];
    try {
      for (const tz of ['UTC', 'Asia/Tokyo', 'America/New_York']) {
        process.env['TZ'] = tz;
        expect(parseServerDate('Wed May  1 09:30:05 2024'), tz).toBe('2024-05-01T09:30:05Z');
        expect(parseServerDate('Wednesday, 01-May-24 09:30:05 GMT'), tz).toBe('2024-05-01T09:30:05Z');
        expect(parseServerDate('Wed, 01 May 2024 09:30:05 GMT'), tz).toBe('2024-05-01T09:30:05Z');
      }
    } finally {
      if (zone === undefined) delete process.env['TZ'];
      else process.env['TZ'] = zone;
    }
  });

  it('is null when the header is absent, empty or garbage', () => {
    expect(parseServerDate(undefined)).toBeNull();
    expect(parseServerDate('')).toBeNull();
    expect(parseServerDate('yesterday-ish')).toBeNull();
  });
});

describe('decideRetry', () => {
  const fresh = { retries: 0, rateLimitedRetries: 0 };
  const opts = { ...DEFAULT_RETRY, limit: 2, baseDelayMs: 10, maxDelayMs: 100, maxRetryAfterMs: 5000 };

  it('retries network resets, timeouts, retriable statuses and invalid bodies', () => {
    expect(decideRetry({ kind: 'network', networkCode: 'ECONNRESET' }, fresh, opts).retry).toBe(true);
    expect(decideRetry({ kind: 'network', networkCode: 'ECONNREFUSED' }, fresh, opts).retry).toBe(true);
    expect(decideRetry({ kind: 'timeout' }, fresh, opts).retry).toBe(true);
    expect(decideRetry({ kind: 'status', status: 503, retriable: true }, fresh, opts).retry).toBe(true);
    expect(decideRetry({ kind: 'invalid_body', detail: 'x' }, fresh, opts).retry).toBe(true);
  });

  it('does not retry fatal statuses or unknown network codes', () => {
    expect(decideRetry({ kind: 'status', status: 401, retriable: false }, fresh, opts).retry).toBe(false);
    expect(decideRetry({ kind: 'network', networkCode: 'ERR_INVALID_URL' }, fresh, opts).retry).toBe(false);
  });

  it('stops once the retry limit is spent', () => {
    expect(decideRetry({ kind: 'timeout' }, { retries: 2, rateLimitedRetries: 0 }, opts).retry).toBe(false);
  });

  it('waits Retry-After on a 429 without spending the retry limit', () => {
    const decision = decideRetry({ kind: 'rate_limited', retryAfterMs: 2000 }, { retries: 2, rateLimitedRetries: 0 }, opts);
    expect(decision).toMatchObject({ retry: true, delayMs: 2000, rateLimited: true });
  });

  it('gives up on a 429 whose Retry-After exceeds maxRetryAfterMs', () => {
    expect(decideRetry({ kind: 'rate_limited', retryAfterMs: 5001 }, fresh, opts).retry).toBe(false);
  });

  it('bounds the number of 429s waited out', () => {
    const state = { retries: 0, rateLimitedRetries: MAX_RATE_LIMITED_RETRIES };
    expect(decideRetry({ kind: 'rate_limited', retryAfterMs: 0 }, state, opts).retry).toBe(false);
  });

  it('backs off on a 429 without Retry-After', () => {
    const decision = decideRetry({ kind: 'rate_limited', retryAfterMs: null }, fresh, opts, () => 1);
    expect(decision).toMatchObject({ retry: true, delayMs: 10, rateLimited: true });
  });

  it('answers a 429 with Retry-After: 0 with at least half the backoff, growing with each 429, never at once', () => {
    const zero = { kind: 'rate_limited' as const, retryAfterMs: 0 };
    const delayAfter = (rateLimitedRetries: number) =>
      decideRetry(zero, { retries: 0, rateLimitedRetries }, { ...opts, maxDelayMs: 10_000 }, () => 0);
    expect(delayAfter(0)).toMatchObject({ retry: true, delayMs: 5, rateLimited: true });
    expect([1, 2, 3].map((n) => (delayAfter(n) as { delayMs: number }).delayMs)).toEqual([10, 20, 40]);
  });

  it('waits the larger of Retry-After and the backoff', () => {
    const state = { retries: 0, rateLimitedRetries: 6 }; // backoff ceiling 640 ms
    expect(decideRetry({ kind: 'rate_limited', retryAfterMs: 1000 }, state, { ...opts, maxDelayMs: 10_000 }, () => 1)).toMatchObject({
      delayMs: 1000,
    });
    expect(decideRetry({ kind: 'rate_limited', retryAfterMs: 100 }, state, { ...opts, maxDelayMs: 10_000 }, () => 1)).toMatchObject({
      delayMs: 640,
    });
  });
});
