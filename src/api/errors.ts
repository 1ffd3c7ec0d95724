/**
 * One class per way a call to the service fails, each with the fields needed to act and a one-line English
 * message that says the fix. None of them carries a got error: got's errors hold the request options,
 * headers included, so only safe fields (a network code, a status) are copied out.
 */
import { redactKeys, SalesyncError, type ErrorDisposition } from '../core/errors.js';
import type { WaitSource } from './retry.js';
import { errorEnvelopeSchema, type ErrorEnvelope, type FieldError } from './schemas.js';

export type { FieldError } from './schemas.js';

/** The service's error codes (spec: Errors). More may be added; unknown ones are kept as sent. */
export const KNOWN_SERVICE_CODES = [
  'invalid_request',
  'validation_error',
  'unauthorized',
  'forbidden',
  'not_found',
  'rate_limited',
  'internal_error',
] as const;

const FATAL_CODES: ReadonlySet<string> = new Set(['unauthorized', 'forbidden', 'validation_error', 'invalid_request', 'not_found']);
const RETRIABLE_CODES: ReadonlySet<string> = new Set(['rate_limited', 'internal_error']);

/** Known codes by what they mean; unknown codes by status, since codes may be added (spec: Versioning). */
export function dispositionFor(code: string, status: number): ErrorDisposition {
  if (FATAL_CODES.has(code)) return 'fatal';
  if (RETRIABLE_CODES.has(code)) return 'retriable';
  return status >= 500 || status === 429 || status === 408 ? 'retriable' : 'fatal';
}

/**
 * The code for an answer without an error envelope (a proxy's HTML 502, an empty 404): read from the status. A 404
 * is `http_404`, never `not_found`: every error of the service carries its envelope (spec: Errors), so a bare one
 * is something else answering (a proxy, a wrong base URL), and must not pass for a record found deleted.
 */
export function codeForStatus(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 429:
      return 'rate_limited';
    default:
      return `http_${status}`;
  }
}

/**
 * Whether a setting's value looks like an API key (pasted into the wrong setting): `sk_` and a run of base62
 * anywhere, in either case (a URL's host is lowercased), or a long token with no scheme, dot or slash.
 */
export function looksLikeApiKey(value: string): boolean {
  const text = value.trim();
  return /sk_[A-Za-z0-9]{8,}/i.test(text) || (!/^[a-z][a-z0-9+.-]*:/i.test(text) && /^[A-Za-z0-9_-]{32,}$/.test(text));
}

/** A wait for a one-line message: `45 s`, `12 min`, `1 h`, `1.5 h`, `3 d`. */
export function formatWait(ms: number): string {
  const seconds = Math.ceil(Math.max(0, ms) / 1000);
  if (seconds < 120) return `${seconds} s`;
  const minutes = seconds / 60;
  if (minutes < 60) return `${Math.round(minutes)} min`;
  const hours = minutes / 60;
  if (hours < 48) return `${Math.round(hours * 10) / 10} h`;
  return `${Math.round((hours / 24) * 10) / 10} d`;
}

/** The advice of every wait too long: what the run does about it, and the setting that bounds it. */
function waitTooLongAdvice(maxRetryAfterMs: number): string {
  return (
    `longer than the ${formatWait(maxRetryAfterMs)} the client waits by itself (SALES_API_MAX_WAIT). The run stops ` +
    "here rather than hang; the next run resumes from its checkpoint. If something else spends the key's or the " +
    "organization's budget, give this sync its own key."
  );
}

export interface ErrorResponse {
  status: number;
  /** The response body as text; parsed here as the error envelope when it is one. */
  body: string;
  method: string;
  /** Path only (e.g. `/v1/deals/`): never a full URL, never headers. */
  path: string;
  /** Retry-After in milliseconds, when the answer carried one. */
  retryAfterMs?: number | null;
}

export interface SalesApiErrorDetails extends ErrorResponse {
  code: string;
  serviceMessage: string | null;
  fields: FieldError[];
  keyFingerprint: string;
  attempts: number;
  /** Set when a 429 asked for a wait longer than the client waits by itself. */
  maxRetryAfterMs?: number;
}

/**
 * Whether an answer of `status` to a list request may be the service refusing its cursor: a client error (400
 * `invalid_request`, 404 `not_found`, or a 4xx code added later) other than the key's own (401, 403) and the
 * rate limit's (429). The spec says how long a cursor lives, and with which key, nowhere.
 */
export function refusesCursor(status: number): boolean {
  return status >= 400 && status < 500 && status !== 401 && status !== 403 && status !== 429;
}

/**
 * Whether an answer of `status` to a page whose cursor came on another key may be the service refusing that cursor
 * on this key: as any cursor (`refusesCursor`), or as a key not allowed it (403 `forbidden`, which the spec gives
 * for a role too low: a read key lists whatever it is allowed to).
 */
export function refusesForeignCursor(status: number): boolean {
  return refusesCursor(status) || status === 403;
}

/** The service answered with an error status. `code` is the service's own code, kept as sent. */
export class SalesApiError extends SalesyncError {
  readonly status: number;
  /** The service's message (Japanese), verbatim except that anything shaped like a key is redacted. Null without an envelope. */
  readonly serviceMessage: string | null;
  /** Field errors of a `validation_error`; empty otherwise. */
  readonly fields: FieldError[];
  readonly method: string;
  readonly path: string;
  /** Retry-After of a 429 in milliseconds, or null. */
  readonly retryAfterMs: number | null;

  constructor(details: SalesApiErrorDetails) {
    super(details.code, salesApiErrorMessage(details), {
      disposition: dispositionFor(details.code, details.status),
      context: {
        status: details.status,
        method: details.method,
        path: details.path,
        keyFingerprint: details.keyFingerprint,
        attempts: details.attempts,
        ...(details.retryAfterMs == null ? {} : { retryAfterMs: details.retryAfterMs }),
      },
    });
    this.name = 'SalesApiError';
    this.status = details.status;
    this.serviceMessage = details.serviceMessage;
    this.fields = details.fields;
    this.method = details.method;
    this.path = details.path;
    this.retryAfterMs = details.retryAfterMs ?? null;
  }
}

/**
 * A single view answered as an empty list (`isEmptySingleView`): the record is not there, as a 404 `not_found` says,
 * and taken the same way (a listed meeting log left out, a deletion confirmed).
 */
export function emptySingleViewError(d: { method: string; path: string; keyFingerprint: string }): SalesApiError {
  return new SalesApiError({
    ...d,
    status: 200,
    body: '',
    code: 'not_found',
    serviceMessage: 'an empty list (results: [])',
    fields: [],
    attempts: 1,
  });
}

/** Builds the error for a non-2xx answer, reading the envelope when there is one. */
export function salesApiErrorFromResponse(
  response: ErrorResponse,
  extra: { keyFingerprint: string; attempts: number; maxRetryAfterMs?: number },
): SalesApiError {
  const envelope = parseErrorEnvelope(response.body);
  return new SalesApiError({
    ...response,
    ...extra,
    code: envelope ? redactKeys(envelope.code) : codeForStatus(response.status),
    serviceMessage: envelope ? redactKeys(envelope.message) : null,
    fields: (envelope?.fields ?? []).map((f) => ({
      name: redactKeys(f.name),
      code: redactKeys(f.code),
      message: redactKeys(f.message),
    })),
  });
}

/**
 * Whether a non-2xx answer says the key is rate-limited: a 429, or the service's `rate_limited` code under another
 * status (the spec: the status does not map one to one to the code, so clients branch on the code).
 */
export function isRateLimited(status: number, body: Buffer | undefined): boolean {
  if (status === 429) return true;
  // A 2xx (a page of records) is not read twice: its envelope, if it is one, is read with its body.
  if (body === undefined || (status >= 200 && status < 300) || !body.includes('rate_limited')) return false;
  return parseErrorEnvelope(body.toString('utf8'))?.code === 'rate_limited';
}

export function parseErrorEnvelope(body: string): ErrorEnvelope['error'] | null {
  let json: unknown;
  try {
    json = JSON.parse(body.startsWith('\uFEFF') ? body.slice(1) : body);
  } catch {
    return null;
  }
  const parsed = errorEnvelopeSchema.safeParse(json);
  return parsed.success ? parsed.data.error : null;
}

/** A service message on one line, quoted, and not so long that it buries our own advice. */
function quote(message: string | null): string {
  if (message === null) return 'no error envelope in the body';
  const oneLine = message.length > 300 ? `${message.slice(0, 300)}…` : message;
  return JSON.stringify(oneLine);
}

function salesApiErrorMessage(d: SalesApiErrorDetails): string {
  const request = `${d.method} ${d.path}`;
  const said = quote(d.serviceMessage);
  switch (d.code) {
    case 'unauthorized':
      return (
        `the service rejected the API key ${d.keyFingerprint} (${d.status} ${request}: ${said}). ` +
        "Check SALES_API_KEY: the key may be mistyped or revoked, or this machine's IP address may not be allowed."
      );
    case 'forbidden':
      return (
        `the API key ${d.keyFingerprint} may not call ${request} (${d.status}: ${said}): its role is too low. ` +
        'A sync needs a key with the read role (read, analyst, write or admin): set SALES_API_KEY to one.'
      );
    case 'validation_error': {
      const fields = d.fields.length
        ? `; fields: ${d.fields.map((f) => `${f.name} (${f.code}: ${JSON.stringify(f.message)})`).join(', ')}`
        : '';
      return (
        `the service rejected ${request} as invalid (${d.status}: ${said})${fields}. ` +
        'Fix the values named above (search filters, page, page_size); if salesync built them itself, report a bug.'
      );
    }
    case 'invalid_request':
      return (
        `the service rejected ${request} as a bad request (${d.status}: ${said}). ` +
        'Check the options given to salesync (page size, updated_after, search filters); if they look right, report a bug.'
      );
    case 'not_found':
      return (
        `the service found nothing at ${request} (${d.status}: ${said}). ` +
        'The record may have been deleted or its id is wrong; if every path answers 404, check SALES_API_BASE_URL.'
      );
    case 'http_404':
      return (
        `${request} answered 404 without the service's error envelope (${said}): something other than the service ` +
        'answered. Check SALES_API_BASE_URL and any proxy in between; nothing was taken as deleted.'
      );
    case 'rate_limited': {
      if (d.retryAfterMs != null && d.maxRetryAfterMs !== undefined && d.retryAfterMs > d.maxRetryAfterMs) {
        return (
          `the service asked key ${d.keyFingerprint} to wait ${formatWait(d.retryAfterMs)} (Retry-After, on ${d.status} ` +
          `${request}: ${said}), ${waitTooLongAdvice(d.maxRetryAfterMs)}`
        );
      }
      const tooLong = `it was still answering 429 after ${d.attempts} attempts`;
      return (
        `the service is rate-limiting key ${d.keyFingerprint} on ${request} (${d.status}: ${said}): ${tooLong}. ` +
        "Something else is spending the key's or the organization's budget: run again later, or give this sync its own key."
      );
    }
    case 'internal_error':
      return (
        `the service failed on ${request} (${d.status}: ${said}) after ${d.attempts} attempts. ` +
        'The fault is on the service side and is likely transient: run again later.'
      );
    default: {
      const advice =
        d.status >= 500
          ? 'It looks like a fault on the service side: run again later.'
          : "Check the request and the service's status page; salesync may need an update for this code.";
      const what = d.serviceMessage === null ? `${d.status} (${said})` : `${d.status} code "${d.code}" (${said})`;
      return `the service answered ${request} with ${what} after ${d.attempts} attempts. ${advice}`;
    }
  }
}

/**
 * The service told every key to wait longer than the client waits by itself (`maxRetryAfterMs`): by Retry-After,
 * or by X-RateLimit-Remaining 0 with a reset that far off. The request fails at once (it may not have been sent)
 * instead of holding the run, and every request behind it, for hours. `rate_limited`, retriable by a later run.
 */
export class RateLimitWaitError extends SalesyncError {
  readonly method: string;
  readonly path: string;
  /** How much longer the key that frees first must wait, in milliseconds (local clock). */
  readonly waitMs: number;
  readonly maxRetryAfterMs: number;
  /** The header that asked for the wait. */
  readonly source: WaitSource;
  /** The waiting key is the one the page's cursor came on (see the constructor's `cursorBound`). */
  readonly cursorBound: boolean;

  constructor(d: {
    method: string;
    path: string;
    keyFingerprint: string;
    /** Live keys of the pool, all of them waiting. */
    keyCount: number;
    /** The key is the one the page's cursor came on, the only key the service takes it on. */
    cursorBound?: boolean;
    waitMs: number;
    maxRetryAfterMs: number;
    source: WaitSource;
    /** The answer that asked for the wait, e.g. `429 GET /v1/deals/`. */
    seenOn: string;
  }) {
    const who = d.cursorBound
      ? `key ${d.keyFingerprint}, the only one it takes this page's cursor on,`
      : d.keyCount > 1
        ? `every key; the first to free up, ${d.keyFingerprint},`
        : `key ${d.keyFingerprint}`;
    const why = d.source === 'Retry-After' ? 'Retry-After' : 'X-RateLimit-Remaining 0 until X-RateLimit-Reset';
    super(
      'rate_limited',
      `${d.method} ${d.path}: the service asked ${who} to wait ${formatWait(d.waitMs)} (${why}, on ${d.seenOn}), ` +
        waitTooLongAdvice(d.maxRetryAfterMs),
      {
        disposition: 'retriable',
        context: {
          method: d.method,
          path: d.path,
          keyFingerprint: d.keyFingerprint,
          waitMs: d.waitMs,
          // The name a 429's SalesApiError uses: the worker delays the job by it (jobs/job-outcome.ts).
          retryAfterMs: d.waitMs,
          maxRetryAfterMs: d.maxRetryAfterMs,
          source: d.source,
          seenOn: d.seenOn,
        },
      },
    );
    this.name = 'RateLimitWaitError';
    this.method = d.method;
    this.path = d.path;
    this.waitMs = d.waitMs;
    this.maxRetryAfterMs = d.maxRetryAfterMs;
    this.source = d.source;
    this.cursorBound = d.cursorBound === true;
  }
}

/** Nothing answered at the base URL, or every connection broke, after all retries. */
export class ServiceUnreachableError extends SalesyncError {
  /** The Node/got network code of the last attempt, e.g. ECONNREFUSED. */
  readonly networkCode: string;
  readonly method: string;
  readonly path: string;

  constructor(d: { networkCode: string; host: string; method: string; path: string; attempts: number }) {
    const what = UNREACHABLE_PHRASES[d.networkCode] ?? `the connection to ${d.host} kept failing`;
    super(
      'service_unreachable',
      `could not reach the service: ${what.replace('{host}', d.host)} (${d.networkCode} on ${d.method} ${d.path}, ` +
        `${d.attempts} attempts). Check SALES_API_BASE_URL and that the service is up and reachable from this machine.`,
      {
        disposition: 'retriable',
        context: { networkCode: d.networkCode, host: d.host, method: d.method, path: d.path, attempts: d.attempts },
      },
    );
    this.name = 'ServiceUnreachableError';
    this.networkCode = d.networkCode;
    this.method = d.method;
    this.path = d.path;
  }
}

const UNREACHABLE_PHRASES: Record<string, string> = {
  ECONNREFUSED: 'nothing is listening at {host}',
  ENOTFOUND: 'the host name of {host} does not resolve',
  EAI_AGAIN: 'the host name of {host} could not be resolved (DNS is failing)',
  EHOSTUNREACH: 'no route to {host}',
  ENETUNREACH: 'the network of {host} is unreachable',
  ECONNRESET: 'the connection to {host} was reset',
  EPIPE: 'the connection to {host} was closed while sending',
};

/** Every attempt ran past the per-attempt timeout. */
export class RequestTimeoutError extends SalesyncError {
  readonly method: string;
  readonly path: string;
  readonly timeoutMs: number;

  constructor(d: { host: string; method: string; path: string; timeoutMs: number; attempts: number }) {
    super(
      'timeout',
      `${d.method} ${d.path} on ${d.host} timed out after ${d.timeoutMs} ms, ${d.attempts} attempts. ` +
        'The service is slow or unreachable: run again later, or raise the request timeout.',
      {
        disposition: 'retriable',
        context: { host: d.host, method: d.method, path: d.path, timeoutMs: d.timeoutMs, attempts: d.attempts },
      },
    );
    this.name = 'RequestTimeoutError';
    this.method = d.method;
    this.path = d.path;
    this.timeoutMs = d.timeoutMs;
  }
}

/**
 * A 2xx whose body is not JSON, does not match the spec's shape, or whose paging loops. Never written.
 * A body that is not JSON (cut short in transit) may come right later: retriable. A body that parses but breaks
 * the spec, or a cursor loop, will not fix itself: fatal.
 */
export class InvalidResponseError extends SalesyncError {
  readonly method: string;
  readonly path: string;
  /** The first problem found, e.g. `results[3].id: must match ^[A-Za-z0-9]{18}$`. */
  readonly detail: string;

  constructor(d: { method: string; path: string; detail: string; attempts: number; disposition: ErrorDisposition }) {
    super(
      'invalid_response',
      `the service's answer to ${d.method} ${d.path} is not what the spec describes: ${d.detail} ` +
        `(${d.attempts} attempts). Nothing was written` +
        // A web page is no answer of the service: its detail already says what to check.
        (d.detail.includes('SALES_API_BASE_URL') ? '.' : "; report it to the service's owner, and to salesync if the spec allows it."),
      { disposition: d.disposition, context: { method: d.method, path: d.path, detail: d.detail, attempts: d.attempts } },
    );
    this.name = 'InvalidResponseError';
    this.method = d.method;
    this.path = d.path;
    this.detail = d.detail;
  }
}

/**
 * A single view (GET of one record or user) answered 2xx with JSON that breaks the record's schema: a problem of
 * that record, not of the service's health. Not retried (the same record comes back the same); the context holds
 * the quarantine entry, `{ id, raw, reason }`, and the request path.
 */
export class InvalidRecordError extends SalesyncError {
  /** The id asked for. */
  readonly recordId: string;
  /** The body as JSON text. */
  readonly raw: string;
  /** The first problem, relative to the record: `properties.amount: must be …`. */
  readonly reason: string;
  readonly path: string;

  constructor(d: { resource: string; id: string; raw: string; reason: string; method: string; path: string }) {
    super(
      'invalid_record',
      `${d.resource} ${d.id}: ${d.reason}. The service sent this record (${d.method} ${d.path}) in a shape the spec ` +
        'does not allow, so it cannot be mirrored as it is; retrying will not change it. Report it to the ' +
        "service's owner with the record's id.",
      { disposition: 'fatal', context: { id: d.id, raw: d.raw, reason: d.reason, path: d.path } },
    );
    this.name = 'InvalidRecordError';
    this.recordId = d.id;
    this.raw = d.raw;
    this.reason = d.reason;
    this.path = d.path;
  }
}
