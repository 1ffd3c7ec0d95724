/**
 * What the request loop does after an attempt that brought no data, as a pure function: send again at once on
 * another key, wait and retry (pausing the key for everyone when the service rate-limited it), or give up.
 * `decideRetry` (retry.ts) weighs the failure; this adds what the key pool already settled.
 */
import { decideRetry, type AttemptFailure, type ResolvedRetryOptions, type RetryState } from './retry.js';

/** What the key pool made of the attempt's answer before the decision. */
export interface KeyOutcome {
  /** The service rejected the key (401) and another live key remains: the rejected one is out of the pool. */
  rejectedKeyDropped: boolean;
  /** The answer told the key to wait longer than `maxRetryAfterMs`, so the key was set aside. */
  keySetAside: boolean;
  /**
   * The answer refused the request's cursor, sent on another key than the one it was given to, for the first time
   * in this request: from now on the pool sends each cursor on its own key (`KeyPool.cursorRefusedOnAnotherKey`).
   * @defaultValue false
   */
  cursorOnAnotherKey?: boolean;
}

export type NextStep =
  /** Send again now: the loop's next acquire offers only the keys still ready (or the cursor's own). No retry is spent. */
  | { action: 'resend'; reason: string }
  /** Wait `delayMs`, then retry with `state`. `pauseKey`: nobody sends on this key meanwhile (a 429). */
  | { action: 'wait'; delayMs: number; pauseKey: boolean; state: RetryState; reason: string }
  | { action: 'fail'; reason: string };

export function nextStep(
  failure: AttemptFailure,
  keys: KeyOutcome,
  state: RetryState,
  options: ResolvedRetryOptions,
  random: () => number = Math.random,
): NextStep {
  if (keys.rejectedKeyDropped) return { action: 'resend', reason: 'key rejected (401): another key remains' };
  if (keys.cursorOnAnotherKey === true) {
    return { action: 'resend', reason: 'cursor refused on another key than the one it was given to' };
  }
  // Told to wait longer than we wait by ourselves: another key may send now, or the loop finds none and fails.
  if (keys.keySetAside && failure.kind === 'rate_limited') return { action: 'resend', reason: 'key set aside' };
  const decision = decideRetry(failure, state, options, random);
  if (!decision.retry) return { action: 'fail', reason: decision.reason };
  // Everyone on this key waits, not only this request: the server counts the key, not the caller. The delay is
  // never below the backoff, so a `Retry-After: 0` still holds the key.
  const next = decision.rateLimited
    ? { ...state, rateLimitedRetries: state.rateLimitedRetries + 1 }
    : { ...state, retries: state.retries + 1 };
  return { action: 'wait', delayMs: decision.delayMs, pauseKey: decision.rateLimited, state: next, reason: decision.reason };
}
