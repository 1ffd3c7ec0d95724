/**
 * The client of the Sales Records Service: `createSalesApi` composes the request loop (request-loop.ts) with the
 * resource methods of `SalesApi`: paths, queries, the check each answer must pass, and read-ahead for list walks.
 */
import type { z } from 'zod';
import type { RecordResourceName } from '../core/resources.js';
import type { MeetingLogRecord, PropertyDefinition, ServiceUser } from '../core/types.js';
import { parseBaseUrl } from './base-url.js';
import { CursorKeys } from './cursor-keys.js';
import { emptySingleViewError, InvalidRecordError, refusesCursor, SalesApiError } from './errors.js';
import { KeyPool, parseKeys } from './keys.js';
import { followCursors } from './pagination.js';
import { createRequester } from './request-loop.js';
import { DEFAULT_RETRY, type ResolvedRetryOptions } from './retry.js';
import { fewerDigits, updatedAfterWith, type FractionDigits } from './updated-after.js';
import { meetingLogRecordSchema, propertyListSchema, serviceRecordSchema, serviceUserSchema } from './schemas.js';
import type { ListOptions, ListPage, RequestStats, SalesApi, SalesApiOptions, SearchRequest } from './types.js';
import {
  checkBody,
  checkListBody,
  checkRecord,
  definitionsEnvelope,
  isEmptySingleView,
  singleViewRecord,
  type CheckedList,
} from './validation.js';

// Where they lived before the request loop moved out; tests and callers import them from here.
export { baseUrlWarnings, isLoopbackHost, parseBaseUrl } from './base-url.js';

/** @defaultValue of SalesApiOptions.timeoutMs */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** @defaultValue of ListOptions.pageSize: the largest page the service serves. */
export const DEFAULT_PAGE_SIZE = 200;

export function createSalesApi(options: SalesApiOptions): SalesApi {
  const keys = new KeyPool(parseKeys(options));
  const base = parseBaseUrl(options.baseUrl);
  const { fingerprints } = keys;
  const fingerprint = fingerprints[0]!;
  const retry: ResolvedRetryOptions = { ...DEFAULT_RETRY, ...withoutUndefined(options.retry ?? {}) };
  const stats: RequestStats = { requests: 0, retries: 0, rateLimited: 0, throttledMs: 0 };
  const log = options.logger.child(
    fingerprints.length === 1
      ? { component: 'sales-api', keyFingerprint: fingerprint }
      : { component: 'sales-api', keyFingerprints: fingerprints },
  );
  const request = createRequester({
    keys,
    limiter: options.limiter,
    lane: options.lane,
    base,
    retry,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    log,
    stats,
  });
  // Only a pool can send a cursor on another key than the one it was given to.
  const cursorKeys = fingerprints.length > 1 ? new CursorKeys() : null;
  // The fraction digits of updated_after the service has taken (see updated-after.ts), for the life of the client.
  let updatedAfterDigits: FractionDigits = 6;
  /** A reject's raw text without our own keys, should a careless service echo one into a record (rejects are stored). */
  const withoutKeys = (raw: string): string => keys.redact(raw);

  /**
   * One page of a list; `onCursor` gets the next page's cursor as soon as the body parses (see `FetchPage`). A
   * refused `updated_after` is sent again with fewer fraction digits (`fewerDigits`).
   */
  async function listPage<T>(
    path: string,
    item: z.ZodType<T>,
    options: ListOptions & { email?: string | undefined },
    onCursor?: (cursor: string) => boolean,
  ): Promise<ListPage<T>> {
    for (;;) {
      const digits = updatedAfterDigits;
      try {
        return await listPageWith(path, item, options, digits, onCursor);
      } catch (error) {
        const fewer = fewerDigits(error, options, digits);
        if (fewer === null) throw error;
        if (updatedAfterDigits === digits) {
          updatedAfterDigits = fewer;
          log.warn(
            { path, digits: fewer },
            'the service refused updated_after with more fraction-of-second digits: it is sent with fewer (floored: no record is left out)',
          );
        }
      }
    }
  }

  async function listPageWith<T>(
    path: string,
    item: z.ZodType<T>,
    options: ListOptions & { email?: string | undefined },
    digits: FractionDigits,
    onCursor?: (cursor: string) => boolean,
  ): Promise<ListPage<T>> {
    const { data, serverDate, keyId } = await request({
      method: 'GET',
      path,
      cursorKey: cursorKeys?.keyOf(options.after),
      query: {
        page_size: options.pageSize ?? DEFAULT_PAGE_SIZE,
        // As given (the watermark's precision is the caller's), unless the service refused as many digits.
        updated_after: options.updatedAfter ? updatedAfterWith(options.updatedAfter, digits) : options.updatedAfter,
        after: options.after,
        email: options.email,
      },
      check: (json) => checkListBody(json, item),
      signal: options.signal,
      // The cursor is read from the bytes first (parsing a full page takes a while), then from the parsed body
      // should the bytes not show it plainly; the walk follows the validated page's cursor whatever was guessed.
      onText:
        onCursor &&
        ((bytes, answeredOn) => {
          const cursor = peekNextCursorInText(bytes);
          if (cursor === null) return false;
          cursorKeys?.remember(cursor, answeredOn);
          return onCursor(cursor);
        }),
      onJson:
        onCursor &&
        ((json, answeredOn) => {
          const cursor = peekNextCursor(json);
          if (cursor === null) return false;
          cursorKeys?.remember(cursor, answeredOn);
          return onCursor(cursor);
        }),
    });
    if (data.nextCursor !== null) cursorKeys?.remember(data.nextCursor, keyId);
    return listPageOf(data, serverDate);
  }

  function walk<T>(path: string, item: z.ZodType<T>, options: ListOptions & { email?: string | undefined }): AsyncGenerator<ListPage<T>> {
    if (options.after && options.afterKey && keys.has(options.afterKey)) cursorKeys?.remember(options.after, options.afterKey);
    return followCursors<T>((after, signal, onCursor) => listPage(path, item, { ...options, after, signal }, onCursor), {
      after: options.after,
      signal: options.signal,
      method: 'GET',
      path,
    });
  }

  /**
   * Every page of a property definitions listing (most services give one): followed as a list's pages are, with
   * the same guards. A cursor refused on the way (it expired while the pages were read) lists them again from the
   * first page, once. The server date is the first answer's.
   */
  async function listDefinitions(
    path: string,
    signal: AbortSignal | undefined,
  ): Promise<{ definitions: PropertyDefinition[]; serverDate: string | null }> {
    const fetchPage = async (after: string | null, pageSignal: AbortSignal): Promise<ListPage<PropertyDefinition>> => {
      const { data, serverDate, keyId } = await request({
        method: 'GET',
        path,
        cursorKey: cursorKeys?.keyOf(after ?? undefined),
        query: { after: after ?? undefined },
        check: (json) => checkBody(definitionsEnvelope(json), propertyListSchema),
        signal: pageSignal,
      });
      const nextCursor = data.paging?.next?.after ?? null;
      if (nextCursor !== null) cursorKeys?.remember(nextCursor, keyId);
      return { results: data.results, rejects: [], nextCursor, serverDate };
    };
    for (let listing = 1; ; listing++) {
      const definitions: PropertyDefinition[] = [];
      let serverDate: string | null = null;
      let pages = 0;
      try {
        for await (const page of followCursors(fetchPage, { signal, method: 'GET', path })) {
          if (pages++ === 0) serverDate = page.serverDate;
          definitions.push(...page.results);
        }
        return { definitions, serverDate };
      } catch (error) {
        const refusedCursor = pages > 0 && error instanceof SalesApiError && refusesCursor(error.status);
        if (!refusedCursor || listing > 1) throw error;
        log.warn(
          { path },
          'the service refused a cursor of the property definitions listing (it may have expired): it is listed again from the start',
        );
      }
    }
  }

  /** A single view: a body that breaks `schema` is that record's problem (`invalid_record`), not retried. */
  async function getOne<T>(
    resource: string,
    id: string,
    path: string,
    schema: z.ZodType<T>,
    signal: AbortSignal | undefined,
    yielding = false,
  ): Promise<T> {
    const { data } = await request({
      method: 'GET',
      path,
      signal,
      yielding,
      check: (json, keyId) => {
        if (isEmptySingleView(json)) return { ok: false, error: emptySingleViewError({ method: 'GET', path, keyFingerprint: keyId }) };
        const checked = checkRecord(singleViewRecord(json), schema);
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

    getMeetingLog: (id, signal, options): Promise<MeetingLogRecord> =>
      getOne('meeting-logs', id, recordPath('meeting-logs', id), meetingLogRecordSchema, signal, options?.yielding),

    listProperties: (resource, signal) => listDefinitions(recordPath(resource, 'properties'), signal),

    async search(resource, searchRequest: SearchRequest, signal) {
      // Search is a read: POST only because the filters need a body, so it is retried like a GET.
      const { data, serverDate } = await request({
        method: 'POST',
        path: recordPath(resource, 'search'),
        body: searchRequest,
        check: (json) => checkListBody(json, serviceRecordSchema),
        signal,
      });
      return listPageOf(data, serverDate);
    },

    listUserPages: (options = {}) => walk<ServiceUser>('/v1/users/', serviceUserSchema, options),

    listUserPage: (options = {}) => listPage<ServiceUser>('/v1/users/', serviceUserSchema, options),

    getUser: (id, signal) => getOne('users', id, `/v1/users/${encodeURIComponent(id)}/`, serviceUserSchema, signal),

    stats: () => ({ ...stats }),

    keyOfCursor: (cursor) => cursorKeys?.keyOf(cursor),
  };
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

// `"paging": {"next": {` then `"after": "<string>"` among next's scalar members; nothing nested may come between.
const PAGING_AFTER = /^"paging"\s*:\s*\{\s*"next"\s*:\s*\{[^{}[\]]*?"after"\s*:\s*("(?:[^"\\]|\\.)*")/;
/** How many bytes after `"paging"` the guess reads: a longer cursor (or link before it) is left to the parse. */
const PAGING_TEXT_BYTES = 4096;

/**
 * `paging.next.after` as the text of a list body shows it, before the body is parsed: read where the last
 * `"paging"` member starts (a list body ends with it; a `"paging"` inside a string is escaped, so never matches).
 * A guess: a record holding a `paging` object of its own after the real one misleads it, so a walk confirms it
 * against the parsed page. Null when the text does not show a non-empty cursor in that plain shape.
 */
export function peekNextCursorInText(body: Buffer): string | null {
  const at = body.lastIndexOf('"paging"');
  if (at < 0) return null;
  const text = body.toString('utf8', at, at + PAGING_TEXT_BYTES);
  const literal = PAGING_AFTER.exec(text)?.[1];
  if (literal === undefined) return null;
  try {
    const after: unknown = JSON.parse(literal);
    return typeof after === 'string' && after.length > 0 ? after : null;
  } catch {
    return null;
  }
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
