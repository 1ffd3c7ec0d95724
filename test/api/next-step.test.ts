import { describe, expect, it } from 'vitest';
import { nextStep, type KeyOutcome } from '../../src/api/next-step.js';
import { DEFAULT_RETRY, MAX_RATE_LIMITED_RETRIES, type AttemptFailure } from '../../src/api/retry.js';

const options = { ...DEFAULT_RETRY, limit: 3, baseDelayMs: 100, maxDelayMs: 1000 };
const fresh = { retries: 0, rateLimitedRetries: 0 };
const keptKey: KeyOutcome = { rejectedKeyDropped: false, keySetAside: false };
const rateLimited = (retryAfterMs: number | null): AttemptFailure => ({ kind: 'rate_limited', retryAfterMs });
const unauthorized: AttemptFailure = { kind: 'status', status: 401, retriable: false };

describe('nextStep', () => {
  it('sends again at once, spending no retry, when a rejected key left the pool and another remains', () => {
    expect(nextStep(unauthorized, { ...keptKey, rejectedKeyDropped: true }, fresh, options)).toMatchObject({ action: 'resend' });
  });

  it('fails on the last key rejected: its 401 is the error', () => {
    expect(nextStep(unauthorized, keptKey, fresh, options)).toMatchObject({ action: 'fail' });
  });

  it('sends again at once, spending no retry, when a cursor was refused on another key than the one it came on; fails on a refusal otherwise', () => {
    const refused: AttemptFailure = { kind: 'status', status: 400, retriable: false };
    expect(nextStep(refused, { ...keptKey, cursorOnAnotherKey: true }, fresh, options)).toMatchObject({ action: 'resend' });
    expect(nextStep(refused, keptKey, fresh, options)).toMatchObject({ action: 'fail' });
  });

  it('sends again at once on another key when a 429 set this key aside, however long its Retry-After', () => {
    const step = nextStep(rateLimited(options.maxRetryAfterMs * 10), { ...keptKey, keySetAside: true }, fresh, options);
    expect(step).toMatchObject({ action: 'resend' });
  });

  it('does not resend for a set-aside key when the failure is no 429: the failure is weighed as usual', () => {
    const step = nextStep({ kind: 'timeout' }, { ...keptKey, keySetAside: true }, fresh, options, () => 1);
    expect(step).toMatchObject({ action: 'wait', pauseKey: false });
  });

  it('waits out a 429 for at least its Retry-After, pauses the key for everyone, and counts a rate-limited retry', () => {
    const step = nextStep(rateLimited(5000), keptKey, { retries: 2, rateLimitedRetries: 1 }, options, () => 0);
    expect(step).toEqual({
      action: 'wait',
      delayMs: 5000,
      pauseKey: true,
      state: { retries: 2, rateLimitedRetries: 2 },
      reason: 'rate limited (Retry-After 5000 ms)',
    });
  });

  it('holds the key after a Retry-After of 0 for at least half the backoff ceiling', () => {
    const step = nextStep(rateLimited(0), keptKey, fresh, options, () => 0);
    expect(step).toMatchObject({ action: 'wait', pauseKey: true, delayMs: 50 });
  });

  it('retries a 5xx with backoff without pausing the key, counting an ordinary retry', () => {
    const step = nextStep(
      { kind: 'status', status: 503, retriable: true },
      keptKey,
      { retries: 1, rateLimitedRetries: 4 },
      options,
      () => 1,
    );
    expect(step).toEqual({
      action: 'wait',
      delayMs: 200,
      pauseKey: false,
      state: { retries: 2, rateLimitedRetries: 4 },
      reason: 'status 503',
    });
  });

  it('gives up once the retries are spent, and on 429s past MAX_RATE_LIMITED_RETRIES', () => {
    expect(nextStep({ kind: 'timeout' }, keptKey, { retries: 3, rateLimitedRetries: 0 }, options)).toMatchObject({ action: 'fail' });
    const throttled = { retries: 0, rateLimitedRetries: MAX_RATE_LIMITED_RETRIES };
    expect(nextStep(rateLimited(1000), keptKey, throttled, options)).toMatchObject({ action: 'fail' });
  });

  it('leaves the state it was given as it was', () => {
    const state = { retries: 0, rateLimitedRetries: 0 };
    nextStep({ kind: 'timeout' }, keptKey, state, options);
    expect(state).toEqual({ retries: 0, rateLimitedRetries: 0 });
  });
});
