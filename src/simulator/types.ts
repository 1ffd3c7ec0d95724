/**
 * The simulator's own vocabulary. It shares nothing with the client code: these types restate the spec
 * (service-spec.md) from the server's side, plus the options and admin surface of the simulator itself.
 */

export type RecordResource = 'deals' | 'companies' | 'contacts' | 'meeting-logs' | 'contact-activities';

export const RECORD_RESOURCES: readonly RecordResource[] = ['deals', 'companies', 'contacts', 'meeting-logs', 'contact-activities'];

export type Role = 'read' | 'analyst' | 'write' | 'admin';

/** A record list's order (the spec leaves it open): oldest change first, newest change first, or by id. */
export type ListOrder = 'updated_at' | 'updated_at_desc' | 'id';

/** A property value as the public API carries it (spec: Property value). */
export type PropertyValue = string | number | boolean | null;

export interface PropertyOption {
  value: string;
  label: string;
}

export interface PropertyDefinition {
  api_name: string;
  display_name: string;
  property_type: string;
  is_core: boolean;
  is_required_on_create: boolean;
  options: PropertyOption[];
}

/** A record as the public API renders it (list, search, truth). */
export interface RecordView {
  id: string;
  properties: Record<string, PropertyValue>;
  created_at: string;
  updated_at: string;
}

export interface SummarySelection {
  value: string;
  level: number;
  order: number;
}

export interface Summary {
  summary_type: string;
  result_type: string;
  text: string | null;
  selections: SummarySelection[];
  reason: string;
  status: string;
  updated_at: string;
}

/** The single-record view of a meeting log (fetch, create, PATCH). */
export interface MeetingLogView extends RecordView {
  summaries: Summary[];
}

export interface UserView {
  id: string;
  email: string;
  name: string;
  is_active: boolean;
}

/** A summary as an admin supplies it; `updated_at` defaults to the simulator clock. */
export interface SummaryInput {
  summary_type: string;
  result_type: string;
  text?: string | null;
  selections?: SummarySelection[];
  reason?: string;
  status?: string;
}

/** See `SimulatorOptions.jsonLayout`. */
export type JsonLayout = 'compact' | 'unkind';

export type FaultKind =
  | 'error'
  | 'error500'
  | 'error502'
  | 'error503'
  | 'timeout'
  | 'reset'
  | 'malformed'
  | 'html'
  | 'rateLimit'
  /** Scripted only (failNext): 403 `forbidden`, a key denied one path (by a gateway policy or a narrower scope). */
  | 'forbidden'
  /**
   * Scripted only (failNext): 404 `not_found` with the envelope, for a record that exists: a single view served by a
   * replica behind the list (the spec promises no consistency between the two).
   */
  | 'notFound'
  /** Scripted only (failNext): 404 with an HTML body and no envelope, as a proxy in front of the service answers. */
  | 'gateway404'
  /**
   * Scripted only (failNext): 200 with the envelope, code `internal_error`. The spec leaves the statuses of
   * `not_found` and `internal_error` unshown and tells clients to branch on `code`, never on the status.
   */
  | 'error200'
  /**
   * Scripted only (failNext): a spurious 429's answer (see `rateLimit`) under status 503: the spec gives 429 for an
   * exceeded limit but says the status does not map one to one to the code, and a gateway may answer so.
   */
  | 'rateLimit503'
  /**
   * Scripted only (failNext): the next record-list request that carries an `after` cursor is served normally, but
   * its `paging.next` points at the request's own cursor, so a client following it gets the same page again.
   * Requests without a cursor (and every other request) leave it armed.
   */
  | 'repeatPage';

export const FAULT_KINDS: readonly FaultKind[] = [
  'error',
  'error500',
  'error502',
  'error503',
  'timeout',
  'reset',
  'malformed',
  'html',
  'rateLimit',
  'forbidden',
  'notFound',
  'gateway404',
  'error200',
  'rateLimit503',
  'repeatPage',
];

/**
 * Faults of the public API (never the admin surface). Each rate is a probability 0..1 drawn per request from a
 * PRNG seeded by `seed`; the kinds are exclusive (one draw decides), so their sum is the share of faulted requests.
 */
export interface FaultSettings {
  /**
   * Every public request is answered this long after it arrived, the service's own work included (as a client
   * measures latency); a fault strikes after it. @defaultValue 0
   */
  latencyMs?: number;
  /** Uniform extra 0..latencyJitterMs on top of latencyMs. @defaultValue 0 */
  latencyJitterMs?: number;
  /** 500/502/503 with the envelope, code `internal_error`. @defaultValue 0 */
  errorRate?: number;
  /** The request is held unanswered until the client gives up or the simulator closes. @defaultValue 0 */
  timeoutRate?: number;
  /** The socket is destroyed without a response. @defaultValue 0 */
  resetRate?: number;
  /** 200 with a truncated JSON body. @defaultValue 0 */
  malformedRate?: number;
  /** 502 with an HTML body (a proxy page). @defaultValue 0 */
  htmlErrorRate?: number;
  /** A spurious 429 `rate_limited` (by default with `Retry-After: 1`, a window reported empty until 1 s on). @defaultValue 0 */
  rateLimitRate?: number;
  /** `Retry-After` of a spurious 429, whole seconds; 0 is what an unkind gateway sends. @defaultValue 1 */
  rateLimitRetryAfterSeconds?: number;
  /** `X-RateLimit-Remaining` of a spurious 429 (a gateway's 429 may leave the key's window untouched). @defaultValue 0 */
  rateLimitRemaining?: number;
  /**
   * `X-RateLimit-Reset` of a spurious 429, in whole seconds after the service clock's current second (`now` +
   * `dateSkewMs`, like the `Date` header); a day stands for a quota spent until tomorrow.
   * @defaultValue rateLimitRetryAfterSeconds
   */
  rateLimitResetSeconds?: number;
  /** Seed of the fault PRNG. @defaultValue the simulator seed */
  seed?: number;
}

export interface SimulatorSizes {
  deals: number;
  companies: number;
  contacts: number;
  meetingLogs: number;
  contactActivities: number;
  users: number;
}

/**
 * How list cursors locate the next page. `keyset`: after the last record served (stable when the list moves).
 * `offset`: a position in the current filtered, ordered list, so when a record behind the cursor moves to the end
 * the records after it shift one place back and the walk steps over one of them.
 */
export type CursorKind = 'keyset' | 'offset';

/** See `SimulatorOptions.definitionsListing`. */
export type DefinitionsShape = 'results' | 'data' | 'array';

/** Raised after a record-list page's body is built, before it is sent (see `SimulatorOptions.onListPage`). */
export interface ListPageEvent {
  resource: RecordResource;
  /** 1 for a request without `after`; otherwise the page number carried by the cursor (2 for the second page...). */
  pageNumber: number;
  /** The records of this page as sent (already serialized: changing them does not change the response). */
  served: RecordView[];
  admin: SimulatorAdmin;
}

export type ListPageHook = (event: ListPageEvent) => void;

/** The service's clock as a client sees it: the `Date` header, and `X-RateLimit-Reset` (Unix seconds on that clock). */
/** The readers a commit lag holds back (`SimulatorOptions.commitLagScope`). */
export type CommitLagScope = 'all' | 'single';

export interface ClockSettings {
  /**
   * Added to the simulator clock (`now`) in `Date` and `X-RateLimit-Reset`; positive = the service's clock runs
   * ahead. The rate-limit window itself counts on `now`. @defaultValue 0
   */
  dateSkewMs?: number;
  /** Send no `Date` header at all. @defaultValue false */
  omitDate?: boolean;
}

/** Names of summary statuses: `generateSummaries` goes none → pending → final[0] → final[0] (regenerated). */
export interface SummaryStatuses {
  /** A summary not generated yet. */
  pending: string;
  /** Finished states: final[0] is a completed summary, final[1] (if any) a failed one (seeded data only). */
  final: string[];
}

/**
 * Ways a record is rendered broken in public responses (list, search, single GET, PATCH/create answers), while
 * the stored record stays clean:
 * - `object_property`: the first property of the record's `properties` (definition order) becomes `{"nested":1}`;
 * - `short_id`: the id loses its last character (17 characters);
 * - `leap_second`: `updated_at` with its seconds set to `60` (e.g. `2024-06-03T12:34:60.123456Z`);
 * - `space_separator`: `updated_at` with a space instead of the `T`;
 * - `null_property_map`: `properties: null`.
 */
export type RecordCorruption = 'object_property' | 'short_id' | 'leap_second' | 'space_separator' | 'null_property_map';

export const RECORD_CORRUPTIONS: readonly RecordCorruption[] = [
  'object_property',
  'short_id',
  'leap_second',
  'space_separator',
  'null_property_map',
];

/** `null_name`: `name: null`; `short_id`: the id loses its last character. */
export type UserCorruption = 'null_name' | 'short_id';

export const USER_CORRUPTIONS: readonly UserCorruption[] = ['null_name', 'short_id'];

/** Ids rendered broken in public responses, sorted. */
export interface CorruptedIds {
  records: Record<RecordResource, string[]>;
  users: string[];
}

export interface SimulatorOptions {
  /** Same seed ⇒ identical data (ids, values, timestamps relative to `epoch`). @defaultValue 1 */
  seed?: number;
  /** @defaultValue deals 500, companies 200, contacts 800, meetingLogs 300, contactActivities 400, users 20 */
  size?: Partial<SimulatorSizes>;
  /** Sliding 60 s window per API key. @defaultValue 1000 */
  perKeyPerMinute?: number;
  /** Sliding 60 s window for all keys together. @defaultValue 5000 */
  perOrgPerMinute?: number;
  /** @defaultValue the four DEFAULT_KEYS */
  keys?: Array<{ key: string; role: Role }>;
  /**
   * Order of list endpoints; the cursor is a keyset on it. 'updated_at_desc' gives the newest change first, so a record
   * changed during a walk moves to the front, behind any cursor. @defaultValue 'updated_at' (keyset on (updated_at, id))
   */
  listOrder?: ListOrder;
  /** Millisecond clock for timestamps of changes and for the rate limiter. @defaultValue Date.now */
  now?: () => number;
  /** Generated data lies in the 400 days before this instant (ms). @defaultValue Date.UTC(2025, 0, 1) */
  epoch?: number;
  /** @defaultValue no faults */
  faults?: FaultSettings;
  /**
   * Cursor of record lists (users: `usersCursorKind`). With 'offset' a record moving behind the cursor makes a
   * walk step over one unchanged record (the case `DESIGN.md` warns about). @defaultValue 'keyset'
   */
  cursorKind?: CursorKind;
  /**
   * Cursor of the users list (ordered by id). With 'offset' a user removed behind the cursor (`removeUser`) makes a
   * walk step over the next one: the spec says the users list pages by cursor, and no more. @defaultValue 'keyset'
   */
  usersCursorKind?: CursorKind;
  /**
   * The most records a list page holds, whatever `page_size` asks (1 to 200 is the request's rule; the spec does not
   * promise a page that size). @defaultValue 200
   */
  maxPageSize?: number;
  /**
   * The most fraction-of-second digits `updated_after` may carry: more is a 400 `validation_error` naming
   * `updated_after` (the spec says "timestamp", its exact format not shown; a parser of whole seconds is 0).
   * @defaultValue any
   */
  updatedAfterDigits?: number;
  /**
   * Record lists' next page begins with the last record of the page before (an inclusive cursor, as a service
   * paging by `updated_at >= the last one given` does): the spec does not say pages never overlap. A page of one
   * record leads on past it. With 'ties' the next page begins with every record of the page before that shares its
   * last record's `updated_at` (a cursor on `updated_at >=` alone), however many; a page whose records all share
   * one leads on past it. @defaultValue false
   */
  overlappingPages?: boolean | 'ties';
  /**
   * With offset cursors over an `updated_at`-ordered list, records sharing one `updated_at` come in an order that
   * depends on the page's offset and size, as a database's top-N sort over a key that ties gives them: a tie split
   * by a page boundary lists one of its records twice and another never, the same way on every walk with that page
   * size. The spec fixes neither the order nor what a cursor is. @defaultValue false
   */
  tiesOrderedByPage?: boolean;
  /**
   * A list cursor is accepted only on the key whose request it was given to; on another key it is refused as a
   * garbled one (400 `invalid_request`), or with `'forbidden'` as a key not allowed it (403 `forbidden`). The spec
   * says to pass a cursor unchanged, and nothing of keys. @defaultValue false
   */
  cursorsBoundToKey?: boolean | 'forbidden';
  /**
   * The shape of the single views (`GET /v1/<resource>/{id}/`, `GET /v1/users/{id}/`), which the spec leaves
   * unshown: the record itself, wrapped as `{"data": record}`, or as a list of one (`{"results": [record],
   * "paging": {"next": null}}`), where an id with no record answers an empty list, as a lookup by id would (200, not
   * 404). @defaultValue 'record'
   */
  singleViewShape?: 'record' | 'data' | 'results';
  /**
   * Each single view of a meeting log gives its summaries rotated one place further than the view before: the spec
   * fixes no order for the array. @defaultValue false
   */
  rotatingSummaries?: boolean;
  /**
   * How property definitions are listed (`GET /v1/<resource>/properties/`). The spec shows deals' answer,
   * `{"results": [...]}`, leaves the other resources' shapes unshown and bounds no listing's length. With
   * `pageSize`, each answer holds that many definitions and names the next page as a list does (`paging.next`,
   * offset cursors under the lists' cursor rules: `expireCursors`, `cursorsBoundToKey`); `shape` 'data' lists the
   * other resources' as `{"data": [...]}` (with `paging` when paged), 'array' as a bare list (never paged).
   * @defaultValue every definition in one `{"results": [...]}`
   */
  definitionsListing?: { pageSize?: number; shape?: DefinitionsShape };
  /**
   * How answers are written; the spec fixes neither the order of a list's members nor the JSON's spacing.
   * 'unkind': every list names `paging` before `results`, and every body is indented. @defaultValue 'compact'
   */
  jsonLayout?: JsonLayout;
  /**
   * Called synchronously for every record-list page answered 200, after its body is built and before it is sent,
   * so a test can change data in the middle of a walk. An exception thrown here makes that response a 500
   * `internal_error` (and is logged). Also `admin.setOnListPage`. @defaultValue none
   */
  onListPage?: ListPageHook;
  /**
   * A change (an update that moves updated_at, a create, an activity moving its parent) keeps the updated_at of
   * the moment it was made but reaches list, search and single GET only once `now` reaches updated_at +
   * commitLagMs; until then they show the previous version (nothing, for a create). `truth()` shows the latest.
   * Also `admin.setCommitLag`. @defaultValue 0
   */
  commitLagMs?: number;
  /**
   * The readers the commit lag holds back: `'all'`, or `'single'`, the single GET alone, as a replica behind the
   * list would serve it (list and search show the latest; the spec promises no consistency between them). Also
   * `admin.setCommitLag`. @defaultValue 'all'
   */
  commitLagScope?: CommitLagScope;
  /**
   * Reads are served by this many replicas, the i-th behind by i/(n−1) of a change's commit lag (the first up to
   * date, the last the whole lag); each read request (a list page, a search, a single GET) goes to one drawn at
   * random. Reads are then not monotonic, as the spec allows (it promises no consistency between two reads): a page
   * can show an older version than a page read before it, and a record a list showed can answer 404 `not_found`
   * right after. Also `admin.setReadReplicas`. @defaultValue 1 (every reader the whole lag)
   */
  readReplicas?: number;
  /**
   * Changes are stamped in whole seconds, so every change made within one second shares its `updated_at` (the
   * spec says only "date-time"). @defaultValue false (microseconds, never two changes alike)
   */
  wholeSecondStamps?: boolean;
  /** The service's clock (`Date`, `X-RateLimit-Reset`) of public responses. Also `admin.setClock`. @defaultValue from `now`, no skew */
  clock?: ClockSettings;
  /**
   * Status names of summaries (seeded and generated). Also `admin.setSummaryStatuses`.
   * @defaultValue `{ pending: 'pending', final: ['completed', 'failed'] }`
   */
  summaryStatuses?: SummaryStatuses;
}

export interface StatsSnapshot {
  /** Public requests answered (faulted ones included), by status. */
  total: number;
  byStatus: Record<string, number>;
  /** Per presented API key (`-` when none), then per status. */
  byKey: Record<string, Record<string, number>>;
  /** `METHOD /v1/deals/` style, ids replaced by `{id}`: e.g. `GET /v1/meeting-logs/{id}/`. */
  byRoute: Record<string, number>;
  /** `METHOD path` exactly as requested (query excluded). */
  byPath: Record<string, number>;
  /** 429s sent by the rate limiter (spurious fault 429s are counted under faults.rateLimit). */
  rateLimited: number;
  /** Faults injected, by kind. */
  faults: Record<string, number>;
}

export interface MutationReport {
  kind: 'update' | 'same-value' | 'create' | 'activity' | 'link' | 'summaries' | 'delete';
  resource: RecordResource;
  id: string;
  /** For activities: the parent whose aggregate moved. */
  parentId?: string;
  /** Whether the record's updated_at moved. */
  movedUpdatedAt: boolean;
}

export interface Truth {
  records: Record<RecordResource, RecordView[]>;
  summaries: Record<string, Summary[]>;
  users: UserView[];
  properties: Record<RecordResource, PropertyDefinition[]>;
  /** Present only while some record or user is corrupted: the ids rendered broken (records above stay clean). */
  corrupted?: CorruptedIds;
}

/** The same operations as the HTTP admin surface (`/_admin/...`), callable in-process. */
export interface SimulatorAdmin {
  truth(): Truth;
  getRecord(resource: RecordResource, id: string): RecordView | MeetingLogView | undefined;
  createRecord(resource: RecordResource, properties: Record<string, PropertyValue>): RecordView;
  updateRecord(resource: RecordResource, id: string, properties: Record<string, PropertyValue>): RecordView;
  deleteRecord(resource: RecordResource, id: string): void;
  /** A deleted record back from the recycle bin, its values and `updated_at` as they were; 404 if never deleted. */
  restoreRecord(resource: RecordResource, id: string): RecordView | MeetingLogView;
  changeLink(resource: RecordResource, id: string, linkProperty: string, newId: string | null): RecordView;
  runPredictionBatch(): { deals: number; companies: number };
  recordActivity(
    resource: 'meeting-logs' | 'contact-activities',
    parentId: string,
    properties?: Record<string, PropertyValue>,
  ): { activity: RecordView; parent: RecordView };
  setSummaries(meetingLogId: string, summaries: SummaryInput[]): Summary[];
  generateSummaries(meetingLogId: string): Summary[];
  addProperty(
    resource: RecordResource,
    def: { api_name?: string; display_name: string; property_type: string; options?: PropertyOption[] },
  ): PropertyDefinition;
  updatePropertyOptions(resource: RecordResource, apiName: string, options: PropertyOption[]): PropertyDefinition;
  renameProperty(resource: RecordResource, apiName: string, displayName: string): PropertyDefinition;
  changePropertyType(resource: RecordResource, apiName: string, newType: string): PropertyDefinition;
  removeProperty(resource: RecordResource, apiName: string): void;
  addUser(user: { email: string; name: string; is_active?: boolean }): UserView;
  setUserActive(id: string, isActive: boolean): UserView;
  /** Remove a user, as the organization's administration screen may (the interface cannot): 404 from then on. */
  removeUser(id: string): void;
  addKey(key: string, role: Role): void;
  revokeKey(key: string): void;
  mutateRandom(count: number, seed: number, kinds?: MutationReport['kind'][]): MutationReport[];
  setFaults(settings: FaultSettings): void;
  clearFaults(): void;
  failNext(n: number, kind: FaultKind, pathPrefix?: string): void;
  stats(): StatsSnapshot;
  resetStats(): void;
  /** Replaces the `onListPage` hook; null removes it. */
  setOnListPage(hook: ListPageHook | null): void;
  /** Commit lag of changes made from now on (pending ones keep theirs); 0 turns it off. */
  setCommitLag(ms: number, scope?: CommitLagScope): void;
  /** `count` replicas serve reads (`SimulatorOptions.readReplicas`): one drawn for each request, or always `serving` (0 is up to date). */
  setReadReplicas(count: number, serving?: 'random' | number): void;
  /** Merges into the clock settings: an omitted member keeps its value. */
  setClock(settings: ClockSettings): void;
  /**
   * Every list cursor given so far is refused from now on: 400 `invalid_request` as for a garbled one, or with
   * `'not_found'` 404 `not_found` (the spec gives no status for it). The spec says nothing of how long a cursor
   * lives, so a service may expire them, or change their key at a deploy.
   */
  expireCursors(answer?: 'invalid_request' | 'not_found'): void;
  /**
   * Record lists show the record twice in a row in its page, the same version (`false`: once again). The spec never
   * says a list gives each record once: a join in the service's query can repeat a row.
   */
  listTwice(resource: RecordResource, id: string, twice?: boolean): void;
  /**
   * Keeps a replica of every record and summary as they stand now; it applies no later change (a create is not
   * in it, a deleted record still is). Replaces the replica kept before.
   */
  keepReplica(): void;
  /**
   * Where single GETs read: `'replica'` (the one kept last, however far behind) or `'primary'` (the default).
   * The spec promises no consistency between a list and a single view, nor between two single views.
   */
  routeSingleViews(to: 'primary' | 'replica'): void;
  /** Names used by summaries generated from now on (stored summaries keep theirs). */
  setSummaryStatuses(statuses: SummaryStatuses): void;
  /** Renders the record broken in public responses until repaired (replaces an earlier corruption of it). */
  corruptRecord(resource: RecordResource, id: string, corruption: RecordCorruption): void;
  repairRecord(resource: RecordResource, id: string): void;
  corruptUser(id: string, corruption: UserCorruption): void;
  repairUser(id: string): void;
  /** The ids currently rendered broken (of existing records and users). */
  corrupted(): CorruptedIds;
  /**
   * Sets a record's updated_at to any instant (ISO 8601 with an offset, or `YYYY-MM-DD`), earlier ones included,
   * values unchanged: the list re-sorts. Immediate (no commit lag; a pending version of the record is dropped).
   */
  setUpdatedAt(resource: RecordResource, id: string, iso: string): RecordView;
}

export interface Simulator {
  /** Port 0 or omitted: a free port. @defaultValue host '127.0.0.1' */
  listen(port?: number, host?: string): Promise<{ url: string; port: number }>;
  /** Closes promptly, keep-alive sockets and held (timeout-fault) requests included. */
  close(): Promise<void>;
  /** e.g. `http://127.0.0.1:43121` (no trailing slash; the API is under `/v1/`). Empty before listen. */
  readonly url: string;
  readonly admin: SimulatorAdmin;
}
