import type { Corruptions } from './corruption.js';
import type { CursorOrder, ListCursor } from './cursor.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { invalidRequest, notFound, ServiceError, fieldError, validationError } from './errors.js';
import type { Keyset, StoredRecord } from './record-store.js';
import { indexAfter, indexAtOrAfter } from './record-store.js';
import type { SalesData } from './sales-data.js';
import { runSearch } from './search.js';
import { ceilMicros, parseDate, parseTimestamp } from './timestamps.js';
import type { CursorKind, DefinitionsShape, RecordResource, RecordView, Role } from './types.js';
import { RECORD_RESOURCES } from './types.js';
import { isRecordId } from './values.js';

/**
 * The public API under /v1/: routing (trailing slashes required), the required role of each endpoint, and the
 * handlers. Authentication, rate limiting and faults happen before this, in the HTTP layer.
 */

export const LIST_DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 200;

export interface ApiRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Parsed JSON body (undefined when empty). */
  body: () => unknown;
  /** Scheme and authority the client used, e.g. `http://127.0.0.1:43121`. */
  origin: string;
  /** The API key it was sent with. */
  key: string;
}

export interface ApiResponse {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Run by the HTTP layer once the body is serialized, before it is sent (the onListPage hook). */
  afterBuilt?: () => void;
}

/** The unkind knobs the handlers consult (see SimulatorOptions). */
export interface ApiKnobs {
  cursorKind: CursorKind;
  usersCursorKind: CursorKind;
  /** The most records a list page holds (SimulatorOptions.maxPageSize). */
  maxPageSize: number;
  /** The most fraction digits `updated_after` may carry (SimulatorOptions.updatedAfterDigits). */
  updatedAfterDigits: number;
  /** What each next page begins with from the one before (SimulatorOptions.overlappingPages). */
  overlappingPages: 'none' | 'last' | 'ties';
  /** Offset pages order a tie by the page asked for (SimulatorOptions.tiesOrderedByPage). */
  tiesOrderedByPage: boolean;
  /** A cursor is accepted only on the key it was given to (SimulatorOptions.cursorsBoundToKey). */
  cursorsBoundToKey: boolean | 'forbidden';
  /** The live keys (to tell a cursor given to another key from a garbled one). */
  liveKeys(): readonly string[];
  /** How a single view wraps its record (SimulatorOptions.singleViewShape). */
  singleViewShape: 'record' | 'data' | 'results';
  /** How property definitions are listed (SimulatorOptions.definitionsListing). */
  definitionsListing: { pageSize: number | null; shape: DefinitionsShape };
  /** Whether record lists show this record twice in a row (`admin.listTwice`). */
  listedTwice(resource: RecordResource, id: string): boolean;
  /** Lists name `paging` before `results` (SimulatorOptions.jsonLayout 'unkind'). */
  pagingFirst: boolean;
  corruptions: Corruptions;
  /** Consumes one armed `repeatPage` fault matching this path; false when none is armed. */
  takeRepeatPage(path: string): boolean;
  /** A page built for the onListPage hook, or null when no hook is set. */
  listPageHook(): ((resource: RecordResource, pageNumber: number, served: RecordView[]) => void) | null;
  /** How a cursor is refused once `expireCursors` chose: 400 `invalid_request` (as a garbled one), or 404 `not_found`. */
  refusedCursor(): 'invalid_request' | 'not_found';
}

export interface Route {
  role: Role;
  run: (request: ApiRequest) => ApiResponse;
}

function isRecordResource(segment: string): segment is RecordResource {
  return (RECORD_RESOURCES as readonly string[]).includes(segment);
}

function methodNotAllowed(allow: string[]): ServiceError {
  return new ServiceError(405, 'invalid_request', `このパスでは ${allow.join(', ')} のみ使用できます。`, undefined, {
    Allow: allow.join(', '),
  });
}

export class PublicApi {
  constructor(
    private readonly data: SalesData,
    /** The key cursors are signed with now (`expireCursors` replaces it). */
    private readonly cursorSecret: () => string,
    private readonly knobs: ApiKnobs,
  ) {}

  /** What a cursor given in answer to `request` is signed with: a key's own when cursors are bound to keys. */
  private secretFor(request: ApiRequest): string {
    return this.knobs.cursorsBoundToKey !== false ? `${this.cursorSecret()}:${request.key}` : this.cursorSecret();
  }

  /** The request's `after`, checked (null without one): one that fails its check, or of another kind, is refused. */
  private cursorOf(request: ApiRequest, order: CursorOrder, kind: CursorKind): ListCursor | null {
    const rawAfter = request.query.get('after');
    if (rawAfter === null) return null;
    const cursor = decodeCursor(this.secretFor(request), order, rawAfter);
    if (!cursor) throw this.refuseCursorOf(request, order, rawAfter);
    if (cursor.kind !== kind) throw this.refuseCursor();
    return cursor;
  }

  /** A cursor that failed its check on this request's key: `forbidden` when another key's, if so configured. */
  private refuseCursorOf(request: ApiRequest, order: CursorOrder, rawAfter: string): ServiceError {
    if (this.knobs.cursorsBoundToKey === 'forbidden') {
      const base = this.cursorSecret();
      const foreign = this.knobs.liveKeys().some((key) => key !== request.key && decodeCursor(`${base}:${key}`, order, rawAfter) !== null);
      if (foreign) return new ServiceError(403, 'forbidden', 'このカーソルは別のAPIキーに発行されたものです。');
    }
    return this.refuseCursor();
  }

  private refuseCursor(): ServiceError {
    return this.knobs.refusedCursor() === 'not_found'
      ? new ServiceError(404, 'not_found', 'カーソル (after) が見つかりません。')
      : invalidRequest('カーソル (after) が不正です。');
  }

  /** A record as the public API sends it: through any corruption. */
  private view(resource: RecordResource, record: StoredRecord, single: boolean): RecordView {
    const view = single ? this.data.renderSingle(resource, record) : this.data.render(resource, record);
    return this.knobs.corruptions.record(resource, view);
  }

  /** The route for a request, or a ServiceError (404 for unknown paths, including ones without a trailing slash). */
  route(method: string, path: string): Route {
    if (!path.startsWith('/v1/') || !path.endsWith('/')) throw notFound('指定されたパスは存在しません。');
    const segments = path.slice(4, -1).split('/');
    if (segments.some((s) => s === '')) throw notFound('指定されたパスは存在しません。');
    const [first, second] = segments;
    if (segments.length > 2 || first === undefined) throw notFound('指定されたパスは存在しません。');

    if (first === 'users') {
      if (method !== 'GET') throw methodNotAllowed(['GET']);
      if (second === undefined) return { role: 'read', run: (r) => this.listUsers(r) };
      return { role: 'read', run: () => this.getUser(second) };
    }
    if (!isRecordResource(first)) throw notFound('指定されたパスは存在しません。');
    const route = this.recordRoute(method, first, second);
    // One replica serves the whole request (SimulatorOptions.readReplicas).
    return {
      role: route.role,
      run: (r) => {
        this.data.lag.serveRead();
        return route.run(r);
      },
    };
  }

  private recordRoute(method: string, resource: RecordResource, second: string | undefined): Route {
    if (second === undefined) {
      if (method === 'GET') return { role: 'read', run: (r) => this.list(resource, r) };
      if (method === 'POST') return { role: 'write', run: (r) => this.create(resource, r) };
      throw methodNotAllowed(['GET', 'POST']);
    }
    if (second === 'properties') {
      if (method !== 'GET') throw methodNotAllowed(['GET']);
      return { role: 'read', run: (r) => this.definitions(resource, r) };
    }
    if (second === 'search') {
      if (method !== 'POST') throw methodNotAllowed(['POST']);
      return { role: 'read', run: (r) => this.search(resource, r) };
    }
    if (method === 'GET') return { role: 'read', run: () => this.getOne(resource, second) };
    if (method === 'PATCH') return { role: 'write', run: (r) => this.patch(resource, second, r) };
    throw methodNotAllowed(['GET', 'PATCH']);
  }

  /** How many records a list page holds: as asked (validated), at most `maxPageSize`. */
  private pageSize(query: URLSearchParams): number {
    const raw = query.get('page_size');
    if (raw === null) return Math.min(LIST_DEFAULT_PAGE_SIZE, this.knobs.maxPageSize);
    if (!/^\d+$/.test(raw)) throw validationError([fieldError('page_size', 'invalid_type', '整数を指定してください。')]);
    const n = Number(raw);
    if (n < 1 || n > MAX_PAGE_SIZE) {
      throw validationError([fieldError('page_size', 'out_of_range', '1 から 200 の範囲で指定してください。')]);
    }
    return Math.min(n, this.knobs.maxPageSize);
  }

  private updatedAfter(query: URLSearchParams): number | null {
    const raw = query.get('updated_after');
    if (raw === null) return null;
    const day = parseDate(raw);
    if (day !== null) return day;
    const parsed = parseTimestamp(raw);
    if (!parsed || (/\.(\d+)/.exec(raw)?.[1]?.length ?? 0) > this.knobs.updatedAfterDigits) {
      throw validationError([fieldError('updated_after', 'invalid_value', 'ISO 8601 形式 (タイムゾーン付き) で指定してください。')]);
    }
    return ceilMicros(parsed);
  }

  private nextLink(request: ApiRequest, after: string): { after: string; link: string } {
    const params = new URLSearchParams(request.query);
    params.set('after', after);
    return { after, link: `${request.origin}${request.path}?${params.toString()}` };
  }

  private list(resource: RecordResource, request: ApiRequest): ApiResponse {
    const pageSize = this.pageSize(request.query);
    const since = this.updatedAfter(request.query);
    const store = this.data.stores[resource];
    const compare = (a: Keyset, b: Keyset): number => store.compare(a, b);
    // What readers see (through the commit lag), in list order.
    let ordered = this.data.visibleOrdered(resource);
    const rawAfter = request.query.get('after');
    const cursor = this.cursorOf(request, store.order, this.knobs.cursorKind);
    if (this.knobs.tiesOrderedByPage && this.knobs.cursorKind === 'offset' && store.order === 'updated_at') {
      ordered = orderTiesBy(ordered, (cursor?.kind === 'offset' ? cursor.offset : 0) * 1_000 + pageSize);
    }
    let start = 0;
    // Offset cursors count records of the filtered list, which in updated_at order is the tail from `since`.
    let skip = cursor?.kind === 'offset' ? cursor.offset : 0;
    if (since !== null && store.order === 'updated_at') start = indexAtOrAfter(ordered, since);
    if (cursor?.kind === 'keyset') start = Math.max(start, indexAfter(ordered, cursor.key, compare));
    if (store.order === 'updated_at') {
      start += skip;
      skip = 0;
    }
    const page: StoredRecord[] = [];
    let more = false;
    for (let i = start; i < ordered.length; i++) {
      const record = ordered[i] as StoredRecord;
      if (since !== null && record.updatedAt < since) continue;
      if (skip > 0) {
        skip -= 1;
        continue;
      }
      if (page.length === pageSize) {
        more = true;
        break;
      }
      page.push(record);
    }
    const pageNumber = cursor?.page ?? 1;
    const last = page[page.length - 1];
    let next: { after: string; link: string } | null = null;
    if (more && last) {
      // An overlapping next page starts at the last record given (or those sharing its updated_at), so it leads on
      // from the one before them.
      const overlap = overlapOf(this.knobs.overlappingPages, page);
      const leadsOn = page[page.length - 1 - overlap] as StoredRecord;
      const nextCursor: ListCursor =
        this.knobs.cursorKind === 'offset'
          ? { kind: 'offset', offset: (cursor?.kind === 'offset' ? cursor.offset : 0) + page.length - overlap, page: pageNumber + 1 }
          : { kind: 'keyset', key: { updatedAt: leadsOn.updatedAt, id: leadsOn.id }, page: pageNumber + 1 };
      next = this.nextLink(request, encodeCursor(this.secretFor(request), store.order, nextCursor));
    }
    // A scripted repeatPage fault: the page leads back to itself (only a request with a cursor consumes it).
    if (rawAfter !== null && this.knobs.takeRepeatPage(request.path)) next = this.nextLink(request, rawAfter);
    const results = page.flatMap((r) => {
      const view = this.view(resource, r, false);
      return this.knobs.listedTwice(resource, r.id) ? [view, view] : [view];
    });
    const hook = this.knobs.listPageHook();
    return {
      status: 200,
      body: this.listBody(results, next),
      ...(hook ? { afterBuilt: () => hook(resource, pageNumber, results) } : {}),
    };
  }

  /**
   * A resource's property definitions: all in one answer, or `pageSize` at a time behind offset cursors, shaped as
   * `definitionsListing.shape` says for every resource but deals, whose shape the spec shows.
   */
  private definitions(resource: RecordResource, request: ApiRequest): ApiResponse {
    const all = this.data.schemas[resource].definitions();
    const { pageSize, shape } = this.knobs.definitionsListing;
    const own = resource === 'deals' ? 'results' : shape;
    if (pageSize === null) return { status: 200, body: own === 'array' ? all : { [own]: all } };
    const cursor = this.cursorOf(request, 'definitions', 'offset');
    const offset = cursor?.kind === 'offset' ? cursor.offset : 0;
    const page = all.slice(offset, offset + pageSize);
    const more = offset + pageSize < all.length;
    const cursorNext: ListCursor = { kind: 'offset', offset: offset + pageSize, page: (cursor?.page ?? 1) + 1 };
    const next = more ? this.nextLink(request, encodeCursor(this.secretFor(request), 'definitions', cursorNext)) : null;
    return { status: 200, body: own === 'results' ? this.listBody(page, next) : { data: page, paging: { next } } };
  }

  private listUsers(request: ApiRequest): ApiResponse {
    const pageSize = this.pageSize(request.query);
    const email = request.query.get('email');
    const cursor = this.cursorOf(request, 'users', this.knobs.usersCursorKind);
    const wanted = email?.toLowerCase();
    // An offset cursor counts users of the filtered list, as it stands when the page is asked for.
    let skip = cursor?.kind === 'offset' ? cursor.offset : 0;
    const page = [];
    let more = false;
    for (const user of this.data.sortedUsers()) {
      if (cursor?.kind === 'keyset' && user.id <= cursor.key.id) continue;
      if (wanted !== undefined && user.email.toLowerCase() !== wanted) continue;
      if (skip > 0) {
        skip -= 1;
        continue;
      }
      if (page.length === pageSize) {
        more = true;
        break;
      }
      page.push(user);
    }
    const pageNumber = cursor?.page ?? 1;
    const last = page[page.length - 1];
    let next: { after: string; link: string } | null = null;
    if (more && last) {
      const nextCursor: ListCursor =
        this.knobs.usersCursorKind === 'offset'
          ? { kind: 'offset', offset: (cursor?.kind === 'offset' ? cursor.offset : 0) + page.length, page: pageNumber + 1 }
          : { kind: 'keyset', key: { updatedAt: 0, id: last.id }, page: pageNumber + 1 };
      next = this.nextLink(request, encodeCursor(this.secretFor(request), 'users', nextCursor));
    }
    const results = page.map((u) => this.knobs.corruptions.user(this.data.renderUser(u)));
    return { status: 200, body: this.listBody(results, next) };
  }

  private getUser(id: string): ApiResponse {
    if (!isRecordId(id)) throw invalidRequest('レコードIDの形式が正しくありません。');
    const user = this.data.users.get(id);
    return this.single(() => {
      if (!user) throw notFound();
      return this.knobs.corruptions.user(this.data.renderUser(user));
    });
  }

  private getOne(resource: RecordResource, id: string): ApiResponse {
    return this.single(() => this.knobs.corruptions.record(resource, this.data.singleView(resource, id)));
  }

  /**
   * A single view's answer: the record as `singleViewShape` wraps it; shaped as a list, an id with no record is an
   * empty one, not a 404.
   */
  private single(record: () => unknown): ApiResponse {
    const shape = this.knobs.singleViewShape;
    if (shape === 'results') {
      try {
        return { status: 200, body: this.listBody([record()], null) };
      } catch (error) {
        if (error instanceof ServiceError && error.code === 'not_found') return { status: 200, body: this.listBody([], null) };
        throw error;
      }
    }
    return { status: 200, body: shape === 'data' ? { data: record() } : record() };
  }

  private create(resource: RecordResource, request: ApiRequest): ApiResponse {
    const body = request.body() as { properties?: unknown } | undefined;
    const record = this.data.create(resource, body?.properties);
    return { status: 201, body: this.view(resource, record, true) };
  }

  private patch(resource: RecordResource, id: string, request: ApiRequest): ApiResponse {
    this.data.require(resource, id);
    const body = request.body() as { properties?: unknown } | undefined;
    const { record } = this.data.patch(resource, id, body?.properties);
    return { status: 200, body: this.view(resource, record, true) };
  }

  private listBody(results: unknown[], next: { after: string; link: string } | null): unknown {
    return this.knobs.pagingFirst ? { paging: { next }, results } : { results, paging: { next } };
  }

  private search(resource: RecordResource, request: ApiRequest): ApiResponse {
    const result = runSearch(this.data, resource, request.body());
    const next = result.hasMore ? { after: String(result.pageNumber + 1), link: `${request.origin}${request.path}` } : null;
    return {
      status: 200,
      body: this.listBody(
        result.page.map((r) => this.view(resource, r, false)),
        next,
      ),
    };
  }
}

/** How many records of `page` the next page begins with again; never the whole page, so a walk always ends. */
function overlapOf(kind: 'none' | 'last' | 'ties', page: readonly StoredRecord[]): number {
  if (kind === 'none' || page.length < 2) return 0;
  if (kind === 'last') return 1;
  const last = page[page.length - 1]!.updatedAt;
  let ties = 1;
  while (ties < page.length && page[page.length - 1 - ties]!.updatedAt === last) ties += 1;
  return ties < page.length ? ties : 0;
}

/**
 * `ordered` (in `updated_at` order) with each run of records sharing one `updated_at` in the order `salt` hashes
 * them to: only the ties are sorted, so a page costs the list's length, not its sort.
 */
function orderTiesBy(ordered: readonly StoredRecord[], salt: number): StoredRecord[] {
  const out = ordered.slice();
  for (let i = 0; i < out.length;) {
    let j = i + 1;
    while (j < out.length && out[j]!.updatedAt === out[i]!.updatedAt) j++;
    if (j - i > 1) {
      const tie = out.slice(i, j).map((record) => ({ record, rank: tieRank(record.id, salt) }));
      tie.sort((a, b) => a.rank - b.rank || (a.record.id < b.record.id ? -1 : 1));
      for (let k = 0; k < tie.length; k++) out[i + k] = tie[k]!.record;
    }
    i = j;
  }
  return out;
}

/** A record's place within a tie, for one page asked for (`salt`): an FNV-1a hash of its id. */
function tieRank(id: string, salt: number): number {
  let hash = 2166136261 ^ salt;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 16777619);
  return hash >>> 0;
}
