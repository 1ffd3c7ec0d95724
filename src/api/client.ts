/**
 * The got-based client of the Sales Records Service. Retries are ours (got's `retry.limit` is 0) so that every
 * attempt takes a rate-limit token first, every answer reaches the limiter, a 429 pauses the whole key, and the
 * error of the last attempt is built from safe fields only.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import got, { RequestError, TimeoutError, type Response } from 'got';
import type { z } from 'zod';
import { ConfigError, SalesyncError } from '../core/errors.js';
import type { RecordResourceName } from '../core/resources.js';
import type { MeetingLogRecord, ServiceUser } from '../core/types.js';
import type { RateLimitObservation } from '../core/rate-limiter.js';
import {
  InvalidRecordError,
  InvalidResponseError,
  RateLimitWaitError,
  RequestTimeoutError,
  ServiceUnreachableError,
  codeForStatus,
  dispositionFor,
  looksLikeApiKey,
  parseErrorEnvelope,
  salesApiErrorFromResponse,
} from './errors.js';
import { KeyPool, parseKeys } from './keys.js';
import {
  DEFAULT_RETRY,
  decideRetry,
  localResetMs,
  parseRetryAfterMs,
  parseServerDate,
  parseServerDateMs,
  waitTooLong,
  type AttemptFailure,
  type ResolvedRetryOptions,
  type RetryState,
  type ServiceWait,
} from './retry.js';
import { followCursors } from './pagination.js';
import { meetingLogRecordSchema, propertyListSchema, serviceRecordSchema, serviceUserSchema } from './schemas.js';
import type { ListOptions, ListPage, RequestStats, SalesApi, SalesApiOptions, SearchRequest } from './types.js';
import { checkBody, checkListBody, checkRecord, parseJson, type Checked, type CheckedList } from './validation.js';

/** @defaultValue of SalesApiOptions.timeoutMs */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** @defaultValue of ListOptions.pageSize: the largest page the service serves. */
export const DEFAULT_PAGE_SIZE = 200;

type Method = 'GET' | 'POST';
type Query = Record<string, string | number | null | undefined>;

interface CallSpec<T> {
  method: Method;
  /** Under the base URL, starting with `/v1/` and ending with `/`. */
  path: string;
  query?: Query;
  body?: unknown;
  /**
   * Checks a 2xx body that parsed as JSON. A failed check with a `detail` is a bad answer (retried: the next one
   * may be whole); one with an `error` is thrown at once (a record that breaks its schema comes back the same).
   */
  check: (json: unknown) => Checked<T> | { ok: false; error: SalesyncError };
  signal?: AbortSignal | undefined;
  /**
   * Sees a 2xx body as soon as it parses, before `check` (a walk reads the next cursor there and asks for the
   * next page). True when it sent a request: the check then waits a turn, so that request leaves first and the
   * check overlaps its latency.
   */
  onJson?: ((json: unknown) => boolean) | undefined;
}

interface CallResult<T> {
  data: T;
  serverDate: string | null;
}

interface RawResponse {
  status: number;
  headers: Response['headers'];
  body: string;
}

export function createSalesApi(options: SalesApiOptions): SalesApi {
  const keys = new KeyPool(parseKeys(options));
  const base = parseBaseUrl(options.baseUrl);
  const { fingerprints } = keys;
  const fingerprint = fingerprints[0]!;
  const retry: ResolvedRetryOptions = { ...DEFAULT_RETRY, ...withoutUndefined(options.retry ?? {}) };
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const { limiter } = options;
  const log = options.logger.child(
    fingerprints.length === 1
      ? { component: 'sales-api', keyFingerprint: fingerprint }
      : { component: 'sales-api', keyFingerprints: fingerprints },
  );
  // The key an attempt went out on, for a pool only: with one key the logger's own binding names it already.
  const keyField = (keyId: string) => (fingerprints.length > 1 ? { keyFingerprint: keyId } : {});
  const stats: RequestStats = { requests: 0, retries: 0, rateLimited: 0, throttledMs: 0 };
  /** A reject's raw text without our own keys, should a careless service echo one into a record (rejects are stored). */
  const withoutKeys = (raw: string): string => keys.redact(raw);

  const http = got.extend({
    // Authorization is set per request: each attempt goes out on the key the limiter granted.
    headers: {
      accept: 'application/json',
      'user-agent': 'salesync',
    },
    retry: { limit: 0 },
    throwHttpErrors: false,
    // The service never redirects; following one could carry the Authorization header somewhere else.
    followRedirect: false,
    timeout: { request: timeoutMs },
  });

  async function send(spec: CallSpec<unknown>, keyId: string): Promise<{ response: RawResponse } | { failure: AttemptFailure }> {
    const url = new URL(base.prefix + spec.path);
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value !== null && value !== undefined) url.searchParams.set(name, String(value));
    }
    try {
      const response = await http(url, {
        method: spec.method,
        responseType: 'text',
        headers: { authorization: `Bearer ${keys.secretOf(keyId)}` },
        ...(spec.body === undefined ? {} : { json: spec.body }),
        ...(spec.signal ? { signal: spec.signal } : {}),
      });
      return { response: { status: response.statusCode, headers: response.headers, body: response.body } };
    } catch (error) {
      if (spec.signal?.aborted) throw spec.signal.reason;
      // Only the code is read: got's errors carry the request options, the Authorization header included.
      if (error instanceof TimeoutError) return { failure: { kind: 'timeout' } };
      if (error instanceof RequestError) {
        if (error.response) noteRateLimits(keyId, error.response.headers, error.response.statusCode, spec);
        return { failure: { kind: 'network', networkCode: error.code } };
      }
      const name = error instanceof Error ? error.name : typeof error;
      return { failure: { kind: 'network', networkCode: `ERR_UNEXPECTED_${name}` } };
    }
  }

  /**
   * Hands an answer's rate-limit headers to the limiter (the reset moved onto the local clock) and returns its
   * Retry-After. A key told to wait longer than `maxRetryAfterMs` is set aside instead of paused: a pause that long
   * would hold every request of the process (and, through Redis, of every process) for hours without a word.
   */
  function noteRateLimits(
    keyId: string,
    headers: Response['headers'],
    status: number,
    request: Pick<CallSpec<unknown>, 'method' | 'path'>,
  ): { retryAfterMs: number | null; tooLong: ServiceWait | null } {
    const now = Date.now();
    const observation = rateLimitObservation(headers, now);
    // Only a 429's Retry-After is ours to honour; an HTTP date in it is on the server's clock, like the reset.
    const retryAfterMs =
      status === 429 ? parseRetryAfterMs(header(headers, 'retry-after'), parseServerDateMs(header(headers, 'date')) ?? now) : null;
    const tooLong = waitTooLong(retryAfterMs, observation, now, retry);
    if (tooLong) {
      keys.setAside(keyId, { untilMs: now + tooLong.ms, source: tooLong.source, seenOn: `${status} ${request.method} ${request.path}` });
      log.warn(
        { waitMs: tooLong.ms, source: tooLong.source, ...keyField(keyId) },
        'sales api key told to wait longer than maxRetryAfterMs: set aside',
      );
    }
    limiter.observe(keyId, tooLong ? { ...observation, resetAt: undefined } : observation);
    return { retryAfterMs, tooLong };
  }

  /** Every live key is set aside: the `rate_limited` error naming the one that may send again first. */
  function setAsideError(spec: CallSpec<unknown>, now: number): RateLimitWaitError {
    const [keyId, waiting] = keys.soonestSetAside();
    return new RateLimitWaitError({
      method: spec.method,
      path: spec.path,
      keyFingerprint: keyId,
      keyCount: keys.live.length,
      waitMs: waiting.untilMs - now,
      maxRetryAfterMs: retry.maxRetryAfterMs,
      source: waiting.source,
      seenOn: waiting.seenOn,
    });
  }

  /**
   * A key the service rejected leaves the pool while another remains; true when the request should simply go
   * again on another key. The last key is never dropped: its 401 is the run's `unauthorized` error.
   */
  function dropRejectedKey(keyId: string): boolean {
    const dropped = keys.drop(keyId);
    if (dropped === 'dropped')
      log.warn({ keyFingerprint: keyId, keysLeft: keys.live.length }, 'sales api key rejected (401): dropped from the key pool');
    return dropped !== 'last';
  }

  async function call<T>(spec: CallSpec<T>): Promise<CallResult<T>> {
    const { method, path, signal } = spec;
    const state: RetryState = { retries: 0, rateLimitedRetries: 0 };
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      const offered = keys.ready(Date.now());
      if (offered.length === 0) throw setAsideError(spec, Date.now());
      const grant = await abortable(() => limiter.acquire(offered, { signal, lane: options.lane }), signal);
      stats.throttledMs += grant.waitedMs;
      // A limiter that does not know the pool (a test stub) may name no key of ours: send on the first offered one.
      const keyId = keys.has(grant.keyId) ? grant.keyId : offered[0]!;
      // Set aside while this request waited for its token: look again rather than send what would be refused.
      if (keys.isSetAside(keyId, Date.now())) continue;
      stats.requests += 1;
      if (attempt > 1) stats.retries += 1;

      const started = performance.now();
      const outcome = await send(spec, keyId);
      const ms = Math.round(performance.now() - started);

      let failure: AttemptFailure;
      let lastResponse: RawResponse | null = null;
      let invalidJson = false;
      let tooLong: ServiceWait | null = null;
      if ('response' in outcome) {
        const response = (lastResponse = outcome.response);
        const noted = noteRateLimits(keyId, response.headers, response.status, spec);
        tooLong = noted.tooLong;
        log.debug({ method, path, status: response.status, ms, attempt, ...keyField(keyId) }, 'sales api attempt');
        if (response.status === 401 && dropRejectedKey(keyId)) continue;
        if (response.status >= 200 && response.status < 300) {
          const json = parseJson(response.body);
          if (json.ok && spec.onJson?.(json.value)) await new Promise((resolve) => setImmediate(resolve));
          const checked = json.ok ? spec.check(json.value) : json;
          if (checked.ok) return { data: checked.data, serverDate: parseServerDate(header(response.headers, 'date')) };
          if ('error' in checked) throw checked.error;
          invalidJson = !json.ok;
          failure = { kind: 'invalid_body', detail: checked.detail };
        } else if (response.status === 429) {
          stats.rateLimited += 1;
          failure = { kind: 'rate_limited', retryAfterMs: noted.retryAfterMs };
        } else {
          const code = parseErrorEnvelope(response.body)?.code ?? codeForStatus(response.status);
          failure = { kind: 'status', status: response.status, retriable: dispositionFor(code, response.status) === 'retriable' };
        }
      } else {
        failure = outcome.failure;
        log.debug({ method, path, error: describeOutcome(failure), ms, attempt }, 'sales api attempt');
      }

      // Told to wait longer than we wait by ourselves: go again at once on another key, or fail at the loop's top.
      if (tooLong && failure.kind === 'rate_limited') continue;
      const decision = decideRetry(failure, state, retry);
      if (!decision.retry) throw finalError(spec, failure, lastResponse, attempt, invalidJson, keyId);
      if (decision.rateLimited) {
        state.rateLimitedRetries += 1;
        // Everyone on this key waits, not only this request: the server counts the key, not the caller. The delay
        // is never below the backoff, so a `Retry-After: 0` still holds the key.
        limiter.pause(keyId, decision.delayMs);
      } else {
        state.retries += 1;
      }
      log.warn({ method, path, attempt, reason: decision.reason, delayMs: decision.delayMs }, 'sales api retry');
      await abortable(() => sleep(decision.delayMs, undefined, signal ? { signal } : undefined), signal);
    }
  }

  function finalError(
    spec: CallSpec<unknown>,
    failure: AttemptFailure,
    response: RawResponse | null,
    attempts: number,
    invalidJson: boolean,
    keyId: string,
  ): SalesyncError {
    const { method, path } = spec;
    switch (failure.kind) {
      case 'timeout':
        return new RequestTimeoutError({ host: base.host, method, path, timeoutMs, attempts });
      case 'network':
        return new ServiceUnreachableError({ networkCode: failure.networkCode, host: base.host, method, path, attempts });
      case 'invalid_body':
        return new InvalidResponseError({
          method,
          path,
          detail: failure.detail,
          attempts,
          // A body cut short may arrive whole later; one that parses but breaks the spec will not fix itself.
          disposition: invalidJson ? 'retriable' : 'fatal',
        });
      case 'status':
      case 'rate_limited':
        return salesApiErrorFromResponse(
          {
            status: response?.status ?? (failure.kind === 'status' ? failure.status : 429),
            body: response?.body ?? '',
            method,
            path,
            retryAfterMs: failure.kind === 'rate_limited' ? failure.retryAfterMs : null,
          },
          { keyFingerprint: keyId, attempts, maxRetryAfterMs: retry.maxRetryAfterMs },
        );
    }
  }

  /** One page of a list; `onCursor` gets the next page's cursor as soon as the body parses (see `FetchPage`). */
  async function listPage<T>(
    path: string,
    item: z.ZodType<T>,
    options: ListOptions & { email?: string | undefined },
    onCursor?: (cursor: string) => boolean,
  ): Promise<ListPage<T>> {
    const { data, serverDate } = await call({
      method: 'GET',
      path,
      query: {
        page_size: options.pageSize ?? DEFAULT_PAGE_SIZE,
        // Passed through as given: the watermark's precision is the caller's, not ours to reformat.
        updated_after: options.updatedAfter,
        after: options.after,
        email: options.email,
      },
      check: (json) => checkListBody(json, item),
      signal: options.signal,
      onJson:
        onCursor &&
        ((json) => {
          const cursor = peekNextCursor(json);
          return cursor !== null && onCursor(cursor);
        }),
    });
    return listPageOf(data, serverDate);
  }

  function walk<T>(path: string, item: z.ZodType<T>, options: ListOptions & { email?: string | undefined }): AsyncGenerator<ListPage<T>> {
    return followCursors<T>((after, signal, onCursor) => listPage(path, item, { ...options, after, signal }, onCursor), {
      after: options.after,
      signal: options.signal,
      method: 'GET',
      path,
    });
  }

  /** A single view: a body that breaks `schema` is that record's problem (`invalid_record`), not retried. */
  async function getOne<T>(resource: string, id: string, path: string, schema: z.ZodType<T>, signal: AbortSignal | undefined): Promise<T> {
    const { data } = await call({
      method: 'GET',
      path,
      signal,
      check: (json) => {
        const checked = checkRecord(json, schema);
        if (checked.ok) return checked;
        const { raw, reason } = checked.reject;
        return { ok: false, error: new InvalidRecordError({ resource, id, raw: withoutKeys(raw), reason, method: 'GET', path }) };
      },
    });
    return data;
  }

  function listPageOf<T>(list: CheckedList<T>, serverDate: string | null): ListPage<T> {
    const rejects = list.rejects.length === 0 ? list.rejects : list.rejects.map((r) => ({ ...r, raw: withoutKeys(r.raw) }));
    return { results: list.results, rejects, nextCursor: list.nextCursor, serverDate };
  }

  const recordPath = (resource: RecordResourceName, ...rest: string[]): string =>
    `/v1/${[resource, ...rest.map(encodeURIComponent)].join('/')}/`;

  return {
    keyFingerprint: fingerprint,
    keyFingerprints: fingerprints,

    listPages: (resource, options = {}) => walk(recordPath(resource), serviceRecordSchema, options),

    listPage: (resource, options = {}) => listPage(recordPath(resource), serviceRecordSchema, options),

    getRecord: (resource, id, signal) => getOne(resource, id, recordPath(resource, id), serviceRecordSchema, signal),

    getMeetingLog: (id, signal): Promise<MeetingLogRecord> =>
      getOne('meeting-logs', id, recordPath('meeting-logs', id), meetingLogRecordSchema, signal),

    async listProperties(resource, signal) {
      const path = recordPath(resource, 'properties');
      const { data, serverDate } = await call({ method: 'GET', path, check: (json) => checkBody(json, propertyListSchema), signal });
      return { definitions: data.results, serverDate };
    },

    async search(resource, request: SearchRequest, signal) {
      // Search is a read: POST only because the filters need a body, so it is retried like a GET.
      const { data, serverDate } = await call({
        method: 'POST',
        path: recordPath(resource, 'search'),
        body: request,
        check: (json) => checkListBody(json, serviceRecordSchema),
        signal,
      });
      return listPageOf(data, serverDate);
    },

    listUserPages: (options = {}) => walk<ServiceUser>('/v1/users/', serviceUserSchema, options),

    listUserPage: (options = {}) => listPage<ServiceUser>('/v1/users/', serviceUserSchema, options),

    getUser: (id, signal) => getOne('users', id, `/v1/users/${encodeURIComponent(id)}/`, serviceUserSchema, signal),

    stats: () => ({ ...stats }),
  };
}

const BASE_URL_SETTING = { setting: 'SALES_API_BASE_URL' };

/**
 * The base URL checked and split: `prefix` has no trailing slash; `host` is safe to print. A pasted API root
 * (`…/v1` or `…/v1/`) is accepted: the client appends `/v1/…` itself. No error repeats the value, which may be a
 * key pasted into the wrong setting.
 */
export function parseBaseUrl(baseUrl: string): { prefix: string; host: string } {
  if (looksLikeApiKey(baseUrl)) {
    throw new ConfigError(
      'invalid_base_url',
      'the service base URL holds what looks like an API key (not shown). Put the key in SALES_API_KEY, and the ' +
        'service address, such as https://api.example.com, in SALES_API_BASE_URL.',
      BASE_URL_SETTING,
    );
  }
  let url: URL | null = null;
  try {
    url = new URL(baseUrl);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    throw new ConfigError(
      'invalid_base_url',
      'the service base URL is not an http(s) URL without query or fragment, such as https://api.example.com ' +
        'or http://127.0.0.1:4010 (/v1/... is appended). Set SALES_API_BASE_URL.',
      BASE_URL_SETTING,
    );
  }
  if (url.username || url.password) {
    throw new ConfigError(
      'invalid_base_url',
      'the service base URL must not carry a user name or password: the API key is sent as a Bearer token. ' +
        'Remove them from SALES_API_BASE_URL and set SALES_API_KEY.',
      BASE_URL_SETTING,
    );
  }
  const path = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return { prefix: `${url.origin}${path}`, host: url.host };
}

/**
 * What is worth a warning in a base URL that works: one line each, for the CLI to log once at start. Empty for a
 * URL `parseBaseUrl` refuses (its error says why).
 */
export function baseUrlWarnings(baseUrl: string): string[] {
  let host: string;
  try {
    host = parseBaseUrl(baseUrl).host;
  } catch {
    return [];
  }
  const url = new URL(baseUrl);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    return [
      `SALES_API_BASE_URL is plain http:// to ${host}: the API key travels to it in clear text, readable by anyone ` +
        'on the way. Use https://.',
    ];
  }
  return [];
}

/** localhost (and `*.localhost`), 127.0.0.0/8 and ::1 (IPv4-mapped 127/8 included), as `URL#hostname` spells them. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host === '::1' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) ||
    /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(host)
  );
}

/**
 * X-RateLimit-* as numbers; a missing or unreadable header stays undefined. The reset is Unix seconds on the
 * server's clock while the limiters compare it with the local one: with a `Date` header it is moved onto the local
 * clock (see `localResetMs`), so a clock that is off by half an hour neither adds half an hour nor ignores the reset.
 */
export function rateLimitObservation(headers: Response['headers'], localNow: number = Date.now()): RateLimitObservation {
  const resetAt = headerNumber(header(headers, 'x-ratelimit-reset'));
  const serverDateMs = parseServerDateMs(header(headers, 'date'));
  return {
    limit: headerNumber(header(headers, 'x-ratelimit-limit')),
    remaining: headerNumber(header(headers, 'x-ratelimit-remaining')),
    resetAt: resetAt === undefined || serverDateMs === null ? resetAt : localResetMs(resetAt, serverDateMs, localNow) / 1000,
  };
}

function header(headers: Response['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function headerNumber(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * `paging.next.after` of a parsed list body, read before the schema checks the body: a non-empty string, or
 * null for anything else (the schema then decides whether the page is valid at all).
 */
export function peekNextCursor(json: unknown): string | null {
  if (json === null || typeof json !== 'object') return null;
  const paging = (json as { paging?: unknown }).paging;
  if (paging === null || typeof paging !== 'object') return null;
  const next = (paging as { next?: unknown }).next;
  if (next === null || typeof next !== 'object') return null;
  const after = (next as { after?: unknown }).after;
  return typeof after === 'string' && after.length > 0 ? after : null;
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

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
