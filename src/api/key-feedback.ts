/**
 * What each answer does to the keys: its rate-limit headers reach the limiter, a wait longer than the client takes
 * by itself sets the key aside, and a 401 drops the key from the pool while another remains.
 */
import type { Response } from 'got';
import type { Logger } from 'pino';
import type { RateLimiter } from '../core/rate-limiter.js';
import type { KeyPool } from './keys.js';
import type { RequestSpec } from './request.js';
import { isRateLimited } from './errors.js';
import { rateLimitObservation, retryAfterOf } from './response-headers.js';
import { waitTooLong, type ResolvedRetryOptions, type ServiceWait } from './retry.js';

export interface KeyFeedback {
  /**
   * Hands an answer's rate-limit headers to the limiter (the reset moved onto the local clock) and returns its
   * Retry-After (a rate-limited answer's only), and whether it refused for the organization (its key's window not
   * spent). A key told to wait longer than `maxRetryAfterMs` is set aside instead of paused: a pause that long would
   * hold every request of the process (and, through Redis, of every process) for hours without a word.
   */
  noteAnswer(
    keyId: string,
    answer: { status: number; headers: Response['headers']; body?: Buffer },
    request: Pick<RequestSpec<unknown>, 'method' | 'path'>,
  ): { retryAfterMs: number | null; tooLong: ServiceWait | null; organizationWide: boolean };
  /**
   * A key the service rejected leaves the pool while another remains; true when the request should simply go
   * again on another key. The last key is never dropped: its 401 is the run's `unauthorized` error.
   */
  dropRejectedKey(keyId: string): boolean;
}

/** The key an attempt went out on, as a log field, for a pool only: with one key the logger's binding names it. */
export function keyLogField(keys: Pick<KeyPool, 'fingerprints'>, keyId: string): { keyFingerprint?: string } {
  return keys.fingerprints.length > 1 ? { keyFingerprint: keyId } : {};
}

export function createKeyFeedback(deps: {
  keys: KeyPool;
  limiter: RateLimiter;
  log: Logger;
  retry: Pick<ResolvedRetryOptions, 'maxRetryAfterMs'>;
}): KeyFeedback {
  const { keys, limiter, log, retry } = deps;
  return {
    noteAnswer(keyId, { status, headers, body }, request) {
      const now = Date.now();
      const observation = rateLimitObservation(headers, now);
      const rateLimited = isRateLimited(status, body);
      const retryAfterMs = retryAfterOf(rateLimited, headers, now);
      // Refused while the key's own window has requests left: the organization's limit, which every key shares.
      const organizationWide = rateLimited && observation.remaining !== undefined && observation.remaining > 0;
      const tooLong = waitTooLong(retryAfterMs, observation, now, retry);
      if (tooLong) {
        keys.setAside(keyId, { untilMs: now + tooLong.ms, source: tooLong.source, seenOn: `${status} ${request.method} ${request.path}` });
        log.warn(
          { waitMs: tooLong.ms, source: tooLong.source, ...keyLogField(keys, keyId) },
          'sales api key told to wait longer than maxRetryAfterMs: set aside',
        );
      }
      // A set-aside key's reset is not the limiter's to wait for: the pool keeps the key out until then.
      limiter.observe(keyId, tooLong ? { ...observation, resetAt: undefined } : observation);
      return { retryAfterMs, tooLong, organizationWide };
    },

    dropRejectedKey(keyId) {
      const dropped = keys.drop(keyId);
      if (dropped === 'dropped')
        log.warn({ keyFingerprint: keyId, keysLeft: keys.live.length }, 'sales api key rejected (401): dropped from the key pool');
      return dropped !== 'last';
    },
  };
}
