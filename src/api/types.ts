import type { RecordResourceName } from '../core/resources.js';
import type { MeetingLogRecord, PropertyDefinition, RejectedRecord, ServiceRecord, ServiceUser } from '../core/types.js';
import type { RateLane, RateLimiter } from '../core/rate-limiter.js';
import type { Logger } from 'pino';

/** Counters of one client's traffic: what a run reports in `sync_runs`. */
export interface RequestStats {
  /** Attempts sent, retries included. */
  requests: number;
  /** Attempts that were retries. */
  retries: number;
  /** 429 answers received. */
  rateLimited: number;
  /** Milliseconds spent waiting for rate-limit tokens. */
  throttledMs: number;
}

export interface ListPage<T> {
  results: T[];
  /** `paging.next.after`, or null on the last page. */
  nextCursor: string | null;
  /** The response's `Date` header as ISO 8601 (second precision), or null when absent. */
  serverDate: string | null;
  /** Elements of `results` that failed validation, left out of `results` (the envelope itself was valid). */
  rejects: RejectedRecord[];
  /** The service had already given this page's cursor earlier in the same walk (it was followed again). */
  cursorRepeated?: boolean;
}

export interface ListOptions {
  /** ISO 8601; the service returns records updated at or after it. */
  updatedAfter?: string | null;
  /** Cursor to continue from (`paging.next.after` of an earlier page). */
  after?: string | null;
  /**
   * The fingerprint of the key whose answer named `after` (a resumed walk's checkpoint keeps it): a pool sends the
   * cursor on that key should the service accept a cursor only on its own (see `keyOfCursor`).
   */
  afterKey?: string | null;
  /** 1 to 200. @defaultValue 200 */
  pageSize?: number;
  signal?: AbortSignal;
}

export type FilterOperator =
  | 'contains'
  | 'not_contains'
  | 'equals'
  | 'not_equals'
  | 'is_empty'
  | 'is_not_empty'
  | 'eq'
  | 'ne'
  | 'gt'
  | 'gte'
  | 'lt'
  | 'lte'
  | 'range'
  | 'is_null'
  | 'is_not_null'
  | 'date_eq'
  | 'date_ne'
  | 'date_after'
  | 'date_before'
  | 'date_on_or_before'
  | 'date_on_or_after'
  | 'date_range'
  | 'in'
  | 'not_in';

export interface FilterCondition {
  field: string;
  operator: FilterOperator;
  value?: string | number | boolean | Array<string | number>;
}

export interface SearchRequest {
  filter_groups?: Array<{ name?: string; conditions: FilterCondition[] }>;
  sort_by?: string[];
  sort_order?: Array<'asc' | 'desc'>;
  page?: number;
  page_size?: number;
}

export interface SalesApi {
  /**
   * Pages of a record list, following `paging.next.after` until the last page, one page read ahead. A record that
   * breaks the spec is in `rejects`, not `results`; a broken envelope throws `invalid_response`. A cursor given
   * earlier in the walk is followed again (that page has `cursorRepeated`), up to `MAX_CURSOR_REPEATS` times a walk;
   * past that the walk throws `invalid_response` ("loop detected in pagination").
   */
  listPages(resource: RecordResourceName, options?: ListOptions): AsyncGenerator<ListPage<ServiceRecord>>;
  /** One page of a record list (records that break the spec in `rejects`). */
  listPage(resource: RecordResourceName, options?: ListOptions): Promise<ListPage<ServiceRecord>>;
  /**
   * One record. Throws `not_found` when the service's error code says so (whatever the status; a bare 404 too), and
   * `invalid_record` (InvalidRecordError, not retried) when the body is JSON that breaks the record's schema.
   */
  getRecord(resource: RecordResourceName, id: string, signal?: AbortSignal): Promise<ServiceRecord>;
  /**
   * The single view of a meeting log, with its summaries. Throws like `getRecord`. `yielding`: its requests give
   * way to those standing level (AcquireOptions.yielding), as a walk's details give way to the walks' pages.
   */
  getMeetingLog(id: string, signal?: AbortSignal, options?: { yielding?: boolean }): Promise<MeetingLogRecord>;
  /** Property definitions, every page of the listing, plus the first answer's server date (the earliest server time a run sees). */
  listProperties(
    resource: RecordResourceName,
    signal?: AbortSignal,
  ): Promise<{ definitions: PropertyDefinition[]; serverDate: string | null }>;
  /** One page of search results (records that break the spec in `rejects`). */
  search(resource: RecordResourceName, request: SearchRequest, signal?: AbortSignal): Promise<ListPage<ServiceRecord>>;
  /** Pages of the user list, walked like `listPages` (a user that breaks the spec, e.g. `name: null`, in `rejects`). */
  listUserPages(options?: ListOptions & { email?: string }): AsyncGenerator<ListPage<ServiceUser>>;
  /** One page of the user list (no next page is asked for). */
  listUserPage(options?: ListOptions & { email?: string }): Promise<ListPage<ServiceUser>>;
  /** One user. Throws like `getRecord`. */
  getUser(id: string, signal?: AbortSignal): Promise<ServiceUser>;
  /** A snapshot of the counters since the client was made. */
  stats(): RequestStats;
  /**
   * The fingerprint of the key whose answer named `cursor`, when a pool of keys remembers it (undefined for one
   * key). A checkpoint keeps it beside its cursor, for `ListOptions.afterKey`.
   */
  keyOfCursor(cursor: string): string | undefined;
  /** A stable, non-secret name for the (first) key: `sk_…` + 8 hex digits of its SHA-256. */
  readonly keyFingerprint: string;
  /** The fingerprints of every key in the pool, in the order given (a key dropped after a 401 included). */
  readonly keyFingerprints: readonly string[];
}

export interface RetryOptions {
  /** Retries after the first attempt. @defaultValue 5 */
  limit?: number;
  /** First backoff delay; doubled each retry, with full jitter. @defaultValue 500 */
  baseDelayMs?: number;
  /** Ceiling of one backoff delay. @defaultValue 30000 */
  maxDelayMs?: number;
  /**
   * Longest wait the client takes by itself, from a 429's Retry-After or from X-RateLimit-Remaining 0 with its
   * reset: a longer one sets the key aside, and once every key is, requests fail at once with `rate_limited`
   * (RateLimitWaitError) instead of pausing for hours. @defaultValue 120000
   */
  maxRetryAfterMs?: number;
}

export interface SalesApiOptions {
  /** e.g. `https://api.example.com` or `http://127.0.0.1:4010`; `/v1/...` is appended (a trailing `/v1` is dropped first). */
  baseUrl: string;
  /** `sk_` + at least 40 base62 characters. Checked before any request; never logged. Same as `apiKeys: [apiKey]`. */
  apiKey?: string;
  /**
   * A pool of keys of one organization (each checked like `apiKey`): every request goes out on the key the
   * limiter grants, and a key answering 401 leaves the pool. Given with `apiKey`, `apiKey` comes first.
   */
  apiKeys?: readonly string[];
  limiter: RateLimiter;
  /** Which share of the rate budget this client spends. @defaultValue 'sync' */
  lane?: RateLane;
  logger: Logger;
  retry?: RetryOptions;
  /** Per-attempt timeout. @defaultValue 30000 */
  timeoutMs?: number;
}
