/**
 * The client's retry decisions as pure functions: what kind of failure an attempt met, whether to try again,
 * and how long to wait. No I/O here, so every branch is tested without a server.
 */
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
  | { kind: 'rate_limited'; retryAfterMs: number | null }
  /** A 2xx whose body is not JSON or does not match the schema. */
  | { kind: 'invalid_body'; detail: string };

export interface RetryState {
  /** Retries spent on anything but 429. */
  retries: number;
  /** Retries spent waiting out 429s. */
  rateLimitedRetries: number;
}

export type RetryDecision =
  | { retry: true; delayMs: number; rateLimited: boolean; reason: string }
  | { retry: false; reason: string };

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

/** Retry-After as milliseconds: integer seconds (the spec) or an HTTP date. Null when absent or unreadable. */
export function parseRetryAfterMs(header: string | undefined, now: number = Date.now()): number | null {
  if (header === undefined) return null;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}

/**
 * The `Date` response header (RFC 9110 IMF-fixdate, second precision) as ISO 8601 UTC without fractional
 * seconds, e.g. `2024-05-01T09:30:00Z`. Null when absent or unreadable.
 */
export function parseServerDate(header: string | undefined): string | null {
  if (header === undefined || header.trim() === '') return null;
  const at = Date.parse(header);
  if (Number.isNaN(at)) return null;
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
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
    const delayMs =
      failure.retryAfterMs ?? retryDelayMs(state.rateLimitedRetries + 1, options, random);
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
      return failure.retryAfterMs === null
        ? 'rate limited (no Retry-After)'
        : `rate limited (Retry-After ${failure.retryAfterMs} ms)`;
    case 'invalid_body':
      return `invalid body: ${failure.detail}`;
  }
}
