/**
 * The client's retry decisions as pure functions: what kind of failure an attempt met, whether to try again,
 * and how long to wait. No I/O here, so every branch is tested without a server.
 */
import type { RateLimitObservation } from '../core/rate-limiter.js';
import type { RetryOptions } from './types.js';

/** Every RetryOptions member resolved to a value. */
export type ResolvedRetryOptions = Required<RetryOptions>;

export const DEFAULT_RETRY: ResolvedRetryOptions = {
  limit: 5,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 120_000,
};

/**
 * 429s are waited out apart from `limit` (the server told us when to come back, so they are not a sign of a
 * broken service), but not forever: a key that is throttled this many times in one request is shared with
 * something that needs the budget more, and the run should stop and say so.
 */
export const MAX_RATE_LIMITED_RETRIES = 20;

/** Connection-level failures that a later attempt may not meet. */
export const RETRIABLE_NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/** The codes that mean "nothing answered at that address", as opposed to a connection that broke. */
export const UNREACHABLE_NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
]);

/** What went wrong with one attempt. */
export type AttemptFailure =
  | { kind: 'network'; networkCode: string }
  | { kind: 'timeout' }
  /** A non-2xx answer; `retriable` is the disposition of its error code (see errors.ts). */
  | { kind: 'status'; status: number; retriable: boolean }
  /** A 429. `retryAfterMs` is its Retry-After, already read against the server's clock (see parseRetryAfterMs). */
  | { kind: 'rate_limited'; retryAfterMs: number | null }
  /** A 2xx whose body is not JSON or does not match the schema. */
  | { kind: 'invalid_body'; detail: string };

export interface RetryState {
  /** Retries spent on anything but 429. */
  retries: number;
  /** Retries spent waiting out 429s. */
  rateLimitedRetries: number;
}

export type RetryDecision = { retry: true; delayMs: number; rateLimited: boolean; reason: string } | { retry: false; reason: string };

/**
 * Exponential backoff with full jitter: a uniform delay in [0, min(maxDelayMs, baseDelayMs · 2^(attempt-1))].
 * `attempt` is 1 for the first retry. Full jitter spreads clients that failed together (AWS architecture blog,
 * "Exponential Backoff And Jitter").
 */
export function retryDelayMs(
  attempt: number,
  options: { baseDelayMs: number; maxDelayMs: number },
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, attempt - 1);
  // 2 ** 1024 is Infinity; min() keeps the ceiling finite whatever the attempt number.
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** Math.min(exponent, 1000));
  return Math.round(Math.max(0, Math.min(1, random())) * Math.max(0, ceiling));
}

/**
 * A rate-limited retry's backoff: "equal jitter", a uniform delay in [ceiling/2, ceiling] of the same ceiling as
 * `retryDelayMs`. The server asked us to slow down: a full-jitter draw near zero would answer a `Retry-After: 0`
 * with a burst, so half the ceiling is kept as a floor and only the rest is spread.
 */
export function rateLimitedDelayMs(
  attempt: number,
  options: { baseDelayMs: number; maxDelayMs: number },
  random: () => number = Math.random,
): number {
  const ceiling = retryDelayMs(attempt, options, () => 1);
  return Math.round(ceiling / 2 + Math.max(0, Math.min(1, random())) * (ceiling / 2));
}

/**
 * Retry-After as milliseconds: integer seconds (the spec) or an HTTP date. An HTTP date is on the server's clock,
 * so pass the server's `Date` as `now` when the answer has one. Null when absent or unreadable; 0 for a past date.
 */
export function parseRetryAfterMs(header: string | undefined, now: number = Date.now()): number | null {
  if (header === undefined) return null;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}

/** The `Date` response header (RFC 9110 IMF-fixdate, whole seconds) as epoch milliseconds. Null when absent or unreadable. */
export function parseServerDateMs(header: string | undefined): number | null {
  if (header === undefined || header.trim() === '') return null;
  // HTTP's obsolete asctime form names no zone but means UTC; Date.parse would read it on the local clock.
  const asctime = ASCTIME.exec(header.trim());
  const at = Date.parse(asctime ? `${asctime[2]} ${asctime[1]} ${asctime[4]} ${asctime[3]} GMT` : header);
  return Number.isNaN(at) ? null : at;
}

/** `Sun Nov  6 08:49:37 1994` (RFC 9110 §5.6.7): month, day, time, year. */
const ASCTIME = /^[A-Za-z]{3} ([A-Za-z]{3}) +(\d{1,2}) (\d{2}:\d{2}:\d{2}) (\d{4})$/;

/**
 * The `Date` response header as ISO 8601 UTC without fractional seconds, e.g. `2024-05-01T09:30:00Z`. Null when
 * absent or unreadable.
 */
export function parseServerDate(header: string | undefined): string | null {
  const at = parseServerDateMs(header);
  return at === null ? null : new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * X-RateLimit-Reset (Unix seconds on the server's clock) moved onto the local clock, in epoch milliseconds:
 * `localNow + (reset - serverDate)`. The Date header is truncated to the second and was stamped before the answer
 * travelled, so the result errs late by under a second plus the transit time, never early.
 */
export function localResetMs(resetAtSeconds: number, serverDateMs: number, localNow: number): number {
  return localNow + (resetAtSeconds * 1000 - serverDateMs);
}

/** Why the service told a key to wait. */
export type WaitSource = 'Retry-After' | 'X-RateLimit-Reset';

/** How long the service told a key to wait, and which header said so. */
export interface ServiceWait {
  ms: number;
  source: WaitSource;
}

/**
 * The longer of what one answer asks a key to wait: its Retry-After, and the reset of a window it reports empty
 * (`X-RateLimit-Remaining: 0`; the observation's `resetAt` already on the local clock). Null when it asks nothing.
 */
export function serviceWait(retryAfterMs: number | null, observation: RateLimitObservation, localNow: number): ServiceWait | null {
  const resetMs =
    observation.remaining === 0 && observation.resetAt !== undefined ? Math.max(0, observation.resetAt * 1000 - localNow) : null;
  if (resetMs !== null && (retryAfterMs === null || resetMs > retryAfterMs)) return { ms: resetMs, source: 'X-RateLimit-Reset' };
  return retryAfterMs === null ? null : { ms: retryAfterMs, source: 'Retry-After' };
}

/**
 * The wait an answer asks for when it is longer than the client waits by itself (`maxRetryAfterMs`), else null.
 * Such a key is set aside rather than paused: pausing it would hold every request of the process for that long.
 */
export function waitTooLong(
  retryAfterMs: number | null,
  observation: RateLimitObservation,
  localNow: number,
  options: Pick<ResolvedRetryOptions, 'maxRetryAfterMs'>,
): ServiceWait | null {
  const wait = serviceWait(retryAfterMs, observation, localNow);
  return wait !== null && wait.ms > options.maxRetryAfterMs ? wait : null;
}

/** Whether to try again after `failure`, given what was spent so far. */
export function decideRetry(
  failure: AttemptFailure,
  state: RetryState,
  options: ResolvedRetryOptions,
  random: () => number = Math.random,
): RetryDecision {
  if (failure.kind === 'rate_limited') {
    if (failure.retryAfterMs !== null && failure.retryAfterMs > options.maxRetryAfterMs) {
      return { retry: false, reason: 'Retry-After is longer than maxRetryAfterMs' };
    }
    if (state.rateLimitedRetries >= MAX_RATE_LIMITED_RETRIES) {
      return { retry: false, reason: `rate limited ${state.rateLimitedRetries + 1} times` };
    }
    // A Retry-After of 0 (or a past date) is no reason to come back at once: never sooner than the backoff.
    const delayMs = Math.max(failure.retryAfterMs ?? 0, rateLimitedDelayMs(state.rateLimitedRetries + 1, options, random));
    return { retry: true, delayMs, rateLimited: true, reason: describeFailure(failure) };
  }
  const retriable =
    failure.kind === 'timeout' ||
    failure.kind === 'invalid_body' ||
    (failure.kind === 'network' && RETRIABLE_NETWORK_CODES.has(failure.networkCode)) ||
    (failure.kind === 'status' && failure.retriable);
  if (!retriable) return { retry: false, reason: `${describeFailure(failure)} is not retriable` };
  if (state.retries >= options.limit) {
    return { retry: false, reason: `${describeFailure(failure)} after ${state.retries} retries` };
  }
  return {
    retry: true,
    delayMs: retryDelayMs(state.retries + 1, options, random),
    rateLimited: false,
    reason: describeFailure(failure),
  };
}

/** A short phrase for logs: never a header, never a body beyond the validation detail. */
export function describeFailure(failure: AttemptFailure): string {
  switch (failure.kind) {
    case 'network':
      return failure.networkCode;
    case 'timeout':
      return 'timeout';
    case 'status':
      return `status ${failure.status}`;
    case 'rate_limited':
      return failure.retryAfterMs === null ? 'rate limited (no Retry-After)' : `rate limited (Retry-After ${failure.retryAfterMs} ms)`;
    case 'invalid_body':
      return `invalid body: ${failure.detail}`;
  }
}
