/**
 * What an answer's headers say about time and rate limits, read without I/O: the rate-limit window, a 429's
 * Retry-After and the `Date` header, each against the server's clock where the spec puts it there.
 */
import type { Response } from 'got';
import type { RateLimitObservation } from '../core/rate-limiter.js';
import { localResetMs, parseRetryAfterMs, parseServerDate, parseServerDateMs } from './retry.js';

type Headers = Response['headers'];

/**
 * X-RateLimit-* as numbers; a missing or unreadable header stays undefined. The reset is Unix seconds on the
 * server's clock while the limiters compare it with the local one: with a `Date` header it is moved onto the local
 * clock (see `localResetMs`), so a clock that is off by half an hour neither adds half an hour nor ignores the reset.
 */
export function rateLimitObservation(headers: Headers, localNow: number = Date.now()): RateLimitObservation {
  const resetAt = headerNumber(header(headers, 'x-ratelimit-reset'));
  const serverDateMs = parseServerDateMs(header(headers, 'date'));
  return {
    limit: headerNumber(header(headers, 'x-ratelimit-limit')),
    // A negative count (a window overdrawn by requests in flight) is a spent window, as 0 is.
    remaining: atLeastZero(headerNumber(header(headers, 'x-ratelimit-remaining'))),
    resetAt: resetAt === undefined || serverDateMs === null ? resetAt : localResetMs(resetAt, serverDateMs, localNow) / 1000,
  };
}

/**
 * A rate-limited answer's Retry-After in milliseconds (a 429, or the envelope's `rate_limited` under another status:
 * see `isRateLimited`), null for any other answer: only those are ours to honour.
 */
export function retryAfterOf(rateLimited: boolean, headers: Headers, localNow: number): number | null {
  if (!rateLimited) return null;
  // An HTTP date in it is on the server's clock, like the reset.
  return parseRetryAfterMs(header(headers, 'retry-after'), parseServerDateMs(header(headers, 'date')) ?? localNow);
}

/** The answer's `Date` header as ISO 8601 UTC (second precision), or null when absent or unreadable. */
export function serverDateOf(headers: Headers): string | null {
  return parseServerDate(header(headers, 'date'));
}

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function atLeastZero(n: number | undefined): number | undefined {
  return n === undefined ? undefined : Math.max(0, n);
}

function headerNumber(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}
