/**
 * The error a request ends with, built from safe fields only (the method, the path, the key's fingerprint, the
 * service's own error body): never from got's errors, which carry the Authorization header.
 */
import type { SalesyncError } from '../core/errors.js';
import {
  InvalidResponseError,
  RateLimitWaitError,
  RequestTimeoutError,
  ServiceUnreachableError,
  salesApiErrorFromResponse,
} from './errors.js';
import type { KeyPool, SetAsideKey } from './keys.js';
import type { RawResponse, RequestSpec } from './request.js';
import type { AttemptFailure } from './retry.js';

type Request = Pick<RequestSpec<unknown>, 'method' | 'path'>;

/** The last attempt and what the client knows of the request, for `errorForFailure`. */
export interface LastAttempt {
  failure: AttemptFailure;
  /** The answer the failure was read from; null when none came. */
  response: RawResponse | null;
  /** Attempts made, the last one included. */
  attempts: number;
  /** The failure is a 2xx body that is not JSON (see Answer). */
  invalidJson: boolean;
  /** The key the last attempt went out on. */
  keyId: string;
}

/** The error of a request whose last attempt failed for good. */
export function errorForFailure(
  request: Request,
  last: LastAttempt,
  client: { host: string; timeoutMs: number; maxRetryAfterMs: number },
): SalesyncError {
  const { method, path } = request;
  const { failure, response, attempts } = last;
  switch (failure.kind) {
    case 'timeout':
      return new RequestTimeoutError({ host: client.host, method, path, timeoutMs: client.timeoutMs, attempts });
    case 'network':
      return new ServiceUnreachableError({ networkCode: failure.networkCode, host: client.host, method, path, attempts });
    case 'invalid_body':
      return new InvalidResponseError({
        method,
        path,
        detail: failure.detail,
        attempts,
        // A body cut short may arrive whole later; one that parses but breaks the spec will not fix itself.
        disposition: last.invalidJson ? 'retriable' : 'fatal',
      });
    case 'status':
    case 'rate_limited':
      return salesApiErrorFromResponse(
        {
          status: response?.status ?? (failure.kind === 'status' ? failure.status : 429),
          body: response?.body.toString('utf8') ?? '',
          method,
          path,
          retryAfterMs: failure.kind === 'rate_limited' ? failure.retryAfterMs : null,
        },
        { keyFingerprint: last.keyId, attempts, maxRetryAfterMs: client.maxRetryAfterMs },
      );
  }
}

/**
 * The page's cursor came on a key now set aside, and the service takes a cursor on its own key only: the
 * `rate_limited` error naming that key's wait (sent on another, the page would be refused as a bad request).
 */
export function cursorKeySetAsideError(
  request: Request,
  wait: [string, SetAsideKey],
  now: number,
  maxRetryAfterMs: number,
): RateLimitWaitError {
  return setAsideError(request, wait, { keyCount: 1, cursorBound: true }, now, maxRetryAfterMs);
}

/** Every live key is set aside: the `rate_limited` error naming the one that may send again first. */
export function allKeysSetAsideError(
  request: Request,
  keys: Pick<KeyPool, 'soonestSetAside' | 'live'>,
  now: number,
  maxRetryAfterMs: number,
): RateLimitWaitError {
  return setAsideError(request, keys.soonestSetAside(), { keyCount: keys.live.length }, now, maxRetryAfterMs);
}

/** The `rate_limited` error of a request no key it may go out on can send now: the wait of `keyId`, set aside. */
function setAsideError(
  request: Request,
  [keyId, waiting]: [string, SetAsideKey],
  who: { keyCount: number; cursorBound?: boolean },
  now: number,
  maxRetryAfterMs: number,
): RateLimitWaitError {
  return new RateLimitWaitError({
    method: request.method,
    path: request.path,
    keyFingerprint: keyId,
    ...who,
    waitMs: waiting.untilMs - now,
    maxRetryAfterMs,
    source: waiting.source,
    seenOn: waiting.seenOn,
  });
}
