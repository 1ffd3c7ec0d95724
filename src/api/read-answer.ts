/**
 * What an answer says, once it arrived: the checked data of a 2xx, the check's own error for a body that will
 * never pass (thrown at once), or the `AttemptFailure` the retry decision weighs. A 2xx body is shown to the
 * spec's `onText` before it is parsed and to its `onJson` before it is checked, so a walk can ask for the next
 * page early.
 */
import type { SalesyncError } from '../core/errors.js';
import { codeForStatus, dispositionFor, parseErrorEnvelope } from './errors.js';
import type { RawResponse, RequestSpec } from './request.js';
import { serverDateOf } from './response-headers.js';
import type { AttemptFailure } from './retry.js';
import { errorEnvelopeSchema } from './schemas.js';
import { parseJson } from './validation.js';

export type Answer<T> =
  | { kind: 'data'; data: T; serverDate: string | null }
  | { kind: 'refused'; error: SalesyncError }
  /** `invalidJson`: a 2xx body that is not JSON at all (cut short, perhaps), as opposed to JSON that breaks the spec. */
  | { kind: 'failed'; failure: AttemptFailure; invalidJson: boolean };

/**
 * Reads `response`, the answer on key `keyId`; `retryAfterMs` is its Retry-After, already read against the server's
 * clock (see retryAfterOf).
 */
export async function readAnswer<T>(
  spec: RequestSpec<T>,
  response: RawResponse,
  retryAfterMs: number | null,
  keyId: string,
): Promise<Answer<T>> {
  if (response.status < 200 || response.status >= 300) {
    return { kind: 'failed', failure: statusFailure(response, retryAfterMs), invalidJson: false };
  }
  // A request sent from here leaves before this body is parsed and checked: those overlap its latency.
  const sentEarly = spec.onText?.(response.body, keyId) === true;
  if (sentEarly) await aTurn();
  const json = parseJson(response.body);
  // The spec leaves the statuses of `not_found` and `internal_error` unshown and says to branch on `code`: its
  // error envelope is that error whatever the status, never a record that fails its check.
  const envelope = json.ok ? errorEnvelopeOf(json.value) : null;
  if (envelope !== null) {
    if (envelope === 'rate_limited') return { kind: 'failed', failure: { kind: 'rate_limited', retryAfterMs }, invalidJson: false };
    const retriable = dispositionFor(envelope, response.status) === 'retriable';
    return { kind: 'failed', failure: { kind: 'status', status: response.status, retriable }, invalidJson: false };
  }
  // Only one early request per answer: once the text led to it, the parsed body need not be shown.
  if (json.ok && !sentEarly && spec.onJson?.(json.value, keyId)) await aTurn();
  const checked = json.ok ? spec.check(json.value, keyId) : json;
  if (checked.ok) return { kind: 'data', data: checked.data, serverDate: serverDateOf(response.headers) };
  if ('error' in checked) return { kind: 'refused', error: checked.error };
  return { kind: 'failed', failure: { kind: 'invalid_body', detail: checked.detail }, invalidJson: !json.ok };
}

/**
 * A non-2xx answer as a failure: a 429, or `rate_limited` under another status (clients branch on the code), with
 * its Retry-After; else its status and whether its error code is retriable.
 */
export function statusFailure(response: Pick<RawResponse, 'status' | 'body'>, retryAfterMs: number | null): AttemptFailure {
  if (response.status === 429) return { kind: 'rate_limited', retryAfterMs };
  const code = parseErrorEnvelope(response.body.toString('utf8'))?.code ?? codeForStatus(response.status);
  if (code === 'rate_limited') return { kind: 'rate_limited', retryAfterMs };
  return { kind: 'status', status: response.status, retriable: dispositionFor(code, response.status) === 'retriable' };
}

/** The code of a 2xx body that is the service's error envelope (its only member `error`), else null. */
function errorEnvelopeOf(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || !('error' in value) || Object.keys(value).length !== 1) return null;
  const parsed = errorEnvelopeSchema.safeParse(value);
  return parsed.success ? parsed.data.error.code : null;
}

const aTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
