import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY,
  MAX_RATE_LIMITED_RETRIES,
  decideRetry,
  parseRetryAfterMs,
  parseServerDate,
  retryDelayMs,
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
});

describe('parseServerDate', () => {
  it('converts the Date header to ISO 8601 UTC at second precision', () => {
    expect(parseServerDate('Wed, 01 May 2024 09:30:05 GMT')).toBe('2024-05-01T09:30:05Z');
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
});
