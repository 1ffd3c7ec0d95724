/**
 * The loop around one request: before each attempt a rate-limit token on a key the pool offers, then the
 * attempt, its answer reported to the keys, and `nextStep` deciding whether to send again, wait or give up.
 * Retries are ours (got's are off) so that every attempt takes a token first, every answer reaches the limiter,
 * a 429 pauses the whole key, and the error of the last attempt is built from safe fields only.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { RateLane, RateLimiter } from '../core/rate-limiter.js';
import { BodyPool } from './body-pool.js';
import { refusesForeignCursor } from './errors.js';
import { createKeyFeedback, keyLogField } from './key-feedback.js';
import type { KeyPool } from './keys.js';
import { nextStep, type NextStep } from './next-step.js';
import { readAnswer } from './read-answer.js';
import type { RawResponse, RequestResult, RequestSpec } from './request.js';
import { allKeysSetAsideError, cursorKeySetAsideError, errorForFailure } from './request-errors.js';
import type { AttemptFailure, ResolvedRetryOptions, RetryState, ServiceWait } from './retry.js';
import { createHttp, sendAttempt } from './send-attempt.js';
import type { RequestStats } from './types.js';

/** Sends one request until an answer passes its check, or throws the error that ended it. */
export type Requester = <T>(spec: RequestSpec<T>) => Promise<RequestResult<T>>;

export interface RequestLoopDeps {
  keys: KeyPool;
  limiter: RateLimiter;
  lane: RateLane | undefined;
  /** The checked base URL (see parseBaseUrl). */
  base: { prefix: string; host: string };
  retry: ResolvedRetryOptions;
  timeoutMs: number;
  log: Logger;
  /** Counted into as attempts go out; the client hands out copies. */
  stats: RequestStats;
}

export function createRequester(deps: RequestLoopDeps): Requester {
  const { keys, limiter, base, retry, timeoutMs, log, stats } = deps;
  const http = createHttp(timeoutMs);
  // Shared by every request of this client: a walk reading ahead holds two bodies at once, each its own buffer.
  const bodies = new BodyPool();
  const feedback = createKeyFeedback({ keys, limiter, log, retry });

  return async function request<T>(spec: RequestSpec<T>): Promise<RequestResult<T>> {
    const { method, path, signal } = spec;
    let state: RetryState = { retries: 0, rateLimitedRetries: 0 };
    // Sent again on its cursor's key once already: a second refusal is the cursor's, not the key's. `taught`: the
    // first refusal bound the pool's cursors to keys, which a second one undoes (an expired cursor teaches nothing).
    let movedToCursorKey = false;
    let taught = false;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      const now = Date.now();
      const cursorKeyWait = keys.cursorKeyWait(spec.cursorKey, now);
      if (cursorKeyWait) throw cursorKeySetAsideError(spec, cursorKeyWait, now, retry.maxRetryAfterMs);
      const offered = keys.offerFor(spec.cursorKey, now);
      if (offered.length === 0) throw allKeysSetAsideError(spec, keys, now, retry.maxRetryAfterMs);
      // A lane's share is of the keys the pool can spend, not of the one a bound cursor may go out on.
      const poolKeys = keys.ready(now).length;
      const grant = await abortable(() => limiter.acquire(offered, { signal, lane: deps.lane, yielding: spec.yielding, poolKeys }), signal);
      stats.throttledMs += grant.waitedMs;
      // A limiter that does not know the pool (a test stub) may name no key of ours: send on the first offered one.
      const keyId = keys.has(grant.keyId) ? grant.keyId : offered[0]!;
      // Set aside while this request waited for its token: look again rather than send what would be refused.
      if (keys.isSetAside(keyId, Date.now())) continue;
      stats.requests += 1;
      if (attempt > 1) stats.retries += 1;

      const started = performance.now();
      const sent = await sendAttempt(http, bodies, base.prefix, spec, keys, keyId);
      const ms = Math.round(performance.now() - started);

      let step: NextStep;
      let organizationWide = false;
      try {
        let failure: AttemptFailure;
        let response: RawResponse | null = null;
        let invalidJson = false;
        let tooLong: ServiceWait | null = null;
        let rejectedKeyDropped = false;
        let cursorOnAnotherKey = false;
        if ('response' in sent) {
          response = sent.response;
          const noted = feedback.noteAnswer(keyId, response, spec);
          tooLong = noted.tooLong;
          organizationWide = noted.organizationWide;
          log.debug({ method, path, status: response.status, ms, attempt, ...keyLogField(keys, keyId) }, 'sales api attempt');
          rejectedKeyDropped = response.status === 401 && feedback.dropRejectedKey(keyId);
          const cursorRefused = refusesForeignCursor(response.status);
          cursorOnAnotherKey = !movedToCursorKey && cursorRefused && keys.cursorRefusedOnAnotherKey(spec.cursorKey, keyId);
          if (taught && cursorRefused && keyId === spec.cursorKey) {
            keys.unbindCursors();
            log.info({ method, path }, 'the cursor was refused on its own key too (it had expired): list pages go out on any key again');
          }
          const answer = await readAnswer(spec, response, noted.retryAfterMs, keyId);
          if (answer.kind === 'data') return { data: answer.data, serverDate: answer.serverDate, keyId };
          if (answer.kind === 'refused') throw answer.error;
          ({ failure, invalidJson } = answer);
          if (failure.kind === 'rate_limited') stats.rateLimited += 1;
        } else {
          failure = sent.failure;
          // The status and headers of an answer whose body broke off still reach the limiter.
          if (sent.answered) feedback.noteAnswer(keyId, sent.answered, spec);
          log.debug({ method, path, error: describeOutcome(failure), ms, attempt }, 'sales api attempt');
        }

        step = nextStep(failure, { rejectedKeyDropped, keySetAside: tooLong !== null, cursorOnAnotherKey }, state, retry);
        if (step.action === 'resend' && cursorOnAnotherKey) {
          movedToCursorKey = true;
          taught = keys.bindCursors();
          if (taught) {
            log.warn(
              { method, path, ...keyLogField(keys, keyId) },
              'the service refused a cursor sent on another key than the one it was given to: each list page now goes out on the key its cursor came on',
            );
          }
        }
        if (step.action === 'fail') {
          throw errorForFailure(
            spec,
            { failure, response, attempts: attempt, invalidJson, keyId },
            { host: base.host, timeoutMs, maxRetryAfterMs: retry.maxRetryAfterMs },
          );
        }
      } finally {
        // Read, parsed and, on a failure, built into its error: the body's buffer may take the next answer.
        if ('response' in sent) sent.release();
      }
      if (step.action === 'resend') continue;
      state = step.state;
      // The organization's limit holds every key of the pool: pausing only this one sends the others into 429s too.
      if (step.pauseKey) for (const id of organizationWide ? keys.live : [keyId]) limiter.pause(id, step.delayMs);
      log.warn({ method, path, attempt, reason: step.reason, delayMs: step.delayMs }, 'sales api retry');
      await abortable(() => sleep(step.delayMs, undefined, signal ? { signal } : undefined), signal);
    }
  };
}

/** Waits for `work`; when the signal fires, rejects with the signal's own reason (not a wrapped AbortError). */
async function abortable<T>(work: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}

function describeOutcome(failure: AttemptFailure): string {
  return failure.kind === 'network' ? failure.networkCode : failure.kind;
}
