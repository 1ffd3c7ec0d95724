import { CommitLag, snapshot } from './commit-lag.js';
import type { FieldError } from './errors.js';
import { fieldError, invalidRequest, notFound, validationError } from './errors.js';
import type { Prng } from './prng.js';
import { createPrng, deriveSeed, randomBase62 } from './prng.js';
import type { ListOrder, StoredRecord } from './record-store.js';
import { RecordStore } from './record-store.js';
import type { FieldSpec, ResourceSchema } from './schema.js';
import { ACTIVITY_PARENT, buildSchemas, isCustomApiName, isPropertyType } from './schema.js';
import { formatTimestamp, parseDate, parseTimestamp } from './timestamps.js';
import type {
  CommitLagScope,
  MeetingLogView,
  PropertyDefinition,
  PropertyOption,
  RecordResource,
  RecordView,
  Summary,
  SummaryInput,
  SummarySelection,
  SummaryStatuses,
  UserView,
} from './types.js';
import { RECORD_RESOURCES } from './types.js';
import type { StoredValue } from './values.js';
import { convertValue, isRecordId, normalizeValue, renderValue, sameValue } from './values.js';

export interface StoredUser {
  id: string;
  email: string;
  name: string;
  isActive: boolean;
}

export interface StoredSummary {
  summary_type: string;
  result_type: string;
  text: string | null;
  selections: SummarySelection[];
  reason: string;
  status: string;
  updatedAt: number;
}

/** What a replica kept by `keepReplica` holds. */
interface Replica {
  records: Record<RecordResource, Map<string, StoredRecord>>;
  summaries: Map<string, StoredSummary[]>;
}

export type ActivityResource = keyof typeof ACTIVITY_PARENT;

export function isActivityResource(resource: RecordResource): resource is ActivityResource {
  return resource === 'meeting-logs' || resource === 'contact-activities';
}

/** Whether a record's timestamps render with +09:00: fixed per record, derived from its id. */
export function jstFor(id: string): boolean {
  return id.charCodeAt(17) % 3 === 0;
}

export interface WriteOptions {
  /** Admin writes may set read-only fields (aggregates, predicted values). */
  allowReadOnly?: boolean;
}

/**
 * The organization's data and every rule about changing it, above all the updated_at rules of the spec:
 * updated_at moves only when a plain value or an aggregate really changes; never for same-value writes, link
 * changes or predicted values.
 */
export class SalesData {
  readonly schemas: Record<RecordResource, ResourceSchema> = buildSchemas();
  readonly stores: Record<RecordResource, RecordStore>;
  readonly users = new Map<string, StoredUser>();
  readonly summaries = new Map<string, StoredSummary[]>();
  private usersSorted: StoredUser[] | null = null;
  /** Deleted records as they were, by `resource/id`, for `restore`. */
  private readonly binned = new Map<string, { record: StoredRecord; summaries: StoredSummary[] | undefined }>();
  private readonly usedIds = new Set<string>();
  /** Randomness of changes made after seeding (new ids, generated summaries, predictions). */
  readonly changePrng: Prng;
  private predictionRuns = 0;
  /** Set by the simulator after seeding: a strictly increasing microsecond clock. */
  clock: () => number = () => {
    throw new Error('clock not set');
  };
  /** The simulator's millisecond clock, which decides when a lagging change becomes visible. */
  nowMs: () => number = Date.now;
  /** What readers (list, search, single GET) still see while changes wait out the commit lag. */
  readonly lag: CommitLag;
  /** The readers the commit lag holds back: all of them, or the single GET alone (a replica behind the list). */
  lagScope: CommitLagScope = 'all';
  /** Names of summary statuses, for seeded and generated summaries. */
  summaryStatuses: SummaryStatuses = { pending: 'pending', final: ['completed', 'failed'] };
  /** Each single view gives a log's summaries rotated one place further (SimulatorOptions.rotatingSummaries). */
  rotatingSummaries = false;
  private singleViews = 0;
  /** A replica that stopped applying changes when it was kept (`keepReplica`); single GETs read it while routed there. */
  private replica: Replica | null = null;
  private singleFromReplica = false;

  constructor(
    listOrder: ListOrder,
    private readonly seed: number,
  ) {
    this.stores = {} as Record<RecordResource, RecordStore>;
    for (const resource of RECORD_RESOURCES) this.stores[resource] = new RecordStore(listOrder);
    this.changePrng = createPrng(deriveSeed(seed, 'changes'));
    this.lag = new CommitLag(() => this.nowMs() * 1000, createPrng(deriveSeed(seed, 'replicas')));
  }

  newId(prng: Prng = this.changePrng): string {
    for (;;) {
      const id = randomBase62(prng, 18);
      if (!this.usedIds.has(id)) {
        this.usedIds.add(id);
        return id;
      }
    }
  }

  // ---- rendering -------------------------------------------------------------------------------------------

  render(resource: RecordResource, record: StoredRecord): RecordView {
    const properties: RecordView['properties'] = {};
    for (const spec of this.schemas[resource].fields) {
      const name = spec.def.api_name;
      const stored = record.values[name];
      // Core fields are always present; a custom property appears once it has a stored value record.
      if (stored === undefined && !spec.def.is_core) continue;
      properties[name] = renderValue(spec.type, stored, record.jst);
    }
    return {
      id: record.id,
      properties,
      created_at: formatTimestamp(record.createdAt, record.jst),
      updated_at: formatTimestamp(record.updatedAt, record.jst),
    };
  }

  /** The single-record view: meeting logs add `summaries`. */
  renderSingle(resource: RecordResource, record: StoredRecord, summaries = this.summaries): RecordView | MeetingLogView {
    const view = this.render(resource, record);
    if (resource !== 'meeting-logs') return view;
    const given = this.renderSummaries(record, summaries);
    if (this.rotatingSummaries && given.length > 1) {
      const turn = this.singleViews++ % given.length;
      given.push(...given.splice(0, turn));
    }
    return { ...view, summaries: given };
  }

  renderSummaries(log: StoredRecord, summaries: ReadonlyMap<string, StoredSummary[]> = this.summaries): Summary[] {
    return (summaries.get(log.id) ?? []).map((s) => ({
      summary_type: s.summary_type,
      result_type: s.result_type,
      text: s.text,
      selections: s.selections.map((x) => ({ ...x })),
      reason: s.reason,
      status: s.status,
      updated_at: formatTimestamp(s.updatedAt, log.jst),
    }));
  }

  renderUser(user: StoredUser): UserView {
    return { id: user.id, email: user.email, name: user.name, is_active: user.isActive };
  }

  sortedUsers(): StoredUser[] {
    if (!this.usersSorted) {
      this.usersSorted = [...this.users.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    }
    return this.usersSorted;
  }

  insertUser(user: StoredUser): void {
    this.usedIds.add(user.id);
    this.users.set(user.id, user);
    this.usersSorted = null;
  }

  insertSeeded(resource: RecordResource, record: StoredRecord): void {
    this.usedIds.add(record.id);
    this.stores[resource].insert(record);
  }

  // ---- lookups ---------------------------------------------------------------------------------------------

  require(resource: RecordResource, id: string): StoredRecord {
    if (!isRecordId(id)) throw invalidRequest('レコードIDの形式が正しくありません。');
    const record = this.stores[resource].get(id);
    if (!record) throw notFound();
    return record;
  }

  // Readers (list, search, single GET) see versions through the commit lag; writers and truth see the stores.

  /** The version readers see, or undefined (unknown, deleted, or created but not yet visible). */
  visibleGet(resource: RecordResource, id: string): StoredRecord | undefined {
    const live = this.stores[resource].get(id);
    if (this.lagScope === 'single') return live;
    return live && (this.lag.resolve(resource, live) ?? undefined);
  }

  /** Keeps a replica of every record and summary as they stand now: it applies no later change. */
  keepReplica(): void {
    const records = {} as Replica['records'];
    for (const resource of RECORD_RESOURCES) {
      records[resource] = new Map([...this.stores[resource].values()].map((r) => [r.id, snapshot(r)]));
    }
    const summaries = new Map(
      [...this.summaries].map(([id, list]) => [id, list.map((s) => ({ ...s, selections: s.selections.map((x) => ({ ...x })) }))]),
    );
    this.replica = { records, summaries };
  }

  /** Where single GETs read: the primary, or the replica kept last (which must exist). */
  routeSingleViews(to: 'primary' | 'replica'): void {
    if (to !== 'primary' && to !== 'replica') throw invalidRequest('to は primary または replica です。');
    if (to === 'replica' && !this.replica) throw invalidRequest('レプリカがありません (keepReplica を先に呼んでください)。');
    this.singleFromReplica = to === 'replica';
  }

  /** The single GET's view: from the replica when routed there (404 for what it never held), else `requireVisible`. */
  singleView(resource: RecordResource, id: string): RecordView | MeetingLogView {
    if (!this.singleFromReplica || !this.replica) return this.renderSingle(resource, this.requireVisible(resource, id));
    if (!isRecordId(id)) throw invalidRequest('レコードIDの形式が正しくありません。');
    const record = this.replica.records[resource].get(id);
    if (!record) throw notFound();
    return this.renderSingle(resource, record, this.replica.summaries);
  }

  /** The version the single GET shows (held back by the commit lag whatever its scope), or 404 `not_found`. */
  requireVisible(resource: RecordResource, id: string): StoredRecord {
    if (!isRecordId(id)) throw invalidRequest('レコードIDの形式が正しくありません。');
    const live = this.stores[resource].get(id);
    const record = live && (this.lag.resolve(resource, live) ?? undefined);
    if (!record) throw notFound();
    return record;
  }

  /** Every version readers see, in no particular order. */
  visibleValues(resource: RecordResource): Iterable<StoredRecord> {
    if (!this.lag.hasPending(resource) || this.lagScope === 'single') return this.stores[resource].values();
    const out: StoredRecord[] = [];
    for (const live of this.stores[resource].values()) {
      const version = this.lag.resolve(resource, live);
      if (version) out.push(version);
    }
    return out;
  }

  /** The versions readers see, in list order (the store's own sorted view when nothing is pending). */
  visibleOrdered(resource: RecordResource): readonly StoredRecord[] {
    const store = this.stores[resource];
    if (!this.lag.hasPending(resource) || this.lagScope === 'single') return store.ordered();
    const list = [...this.visibleValues(resource)];
    return list.sort((a, b) => store.compare(a, b));
  }

  linkExists = (target: NonNullable<FieldSpec['linkTarget']>, id: string): boolean =>
    target === 'users' ? this.users.has(id) : this.stores[target].get(id) !== undefined;

  // ---- writes ----------------------------------------------------------------------------------------------

  private checkBody(properties: unknown): Record<string, unknown> {
    if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) {
      throw validationError([
        fieldError('properties', properties === undefined ? 'required' : 'invalid_type', 'properties オブジェクトを指定してください。'),
      ]);
    }
    return properties as Record<string, unknown>;
  }

  private normalizeAll(
    resource: RecordResource,
    properties: Record<string, unknown>,
    options: WriteOptions,
  ): { values: Map<string, StoredValue>; errors: FieldError[] } {
    const schema = this.schemas[resource];
    const values = new Map<string, StoredValue>();
    const errors: FieldError[] = [];
    for (const [name, raw] of Object.entries(properties)) {
      const spec = schema.get(name);
      if (!spec) {
        errors.push(fieldError(`properties.${name}`, 'unknown_property'));
        continue;
      }
      if (!options.allowReadOnly && (spec.role === 'aggregate' || spec.role === 'prediction')) {
        errors.push(fieldError(`properties.${name}`, 'invalid_value', '読み取り専用の項目です。'));
        continue;
      }
      if ((raw === null || raw === '') && spec.def.is_required_on_create) {
        errors.push(fieldError(`properties.${name}`, 'required'));
        continue;
      }
      const result = normalizeValue(spec, raw, this.linkExists);
      if ('error' in result) errors.push(result.error);
      else values.set(name, result.value);
    }
    return { values, errors };
  }

  private checkContactIdentity(errors: FieldError[], lastName: StoredValue | undefined, email: StoredValue | undefined): void {
    const empty = (v: StoredValue | undefined): boolean => v === undefined || v === null || v === '';
    if (empty(lastName) && empty(email)) {
      const message = '姓またはメールアドレスのどちらかが必要です。';
      errors.push(fieldError('properties.last_name', 'required', message));
      errors.push(fieldError('properties.email', 'required', message));
    }
  }

  create(resource: RecordResource, body: unknown, options: WriteOptions = {}): StoredRecord {
    const properties = this.checkBody(body);
    const { values, errors } = this.normalizeAll(resource, properties, options);
    for (const spec of this.schemas[resource].fields) {
      const v = values.get(spec.def.api_name);
      const reported = errors.some((e) => e.name === `properties.${spec.def.api_name}`);
      if (spec.def.is_required_on_create && !reported && (v === undefined || v === null || v === '')) {
        errors.push(fieldError(`properties.${spec.def.api_name}`, 'required'));
      }
    }
    if (resource === 'contacts') this.checkContactIdentity(errors, values.get('last_name'), values.get('email'));
    if (errors.length > 0) throw validationError(errors);

    const id = this.newId();
    const stored: Record<string, StoredValue> = {};
    for (const spec of this.schemas[resource].fields) {
      if (spec.role === 'aggregate' && spec.type === 'number') stored[spec.def.api_name] = 0;
    }
    // On create, null is the same as no value.
    for (const [name, value] of values) if (value !== null) stored[name] = value;
    const now = this.clock();
    const record: StoredRecord = { id, values: stored, createdAt: now, updatedAt: now, jst: jstFor(id) };
    this.stores[resource].insert(record);
    this.lag.changed(resource, record, null);
    if (isActivityResource(resource)) this.bumpParent(resource, record);
    return record;
  }

  /** PATCH semantics. Returns whether updated_at moved. */
  patch(resource: RecordResource, id: string, body: unknown, options: WriteOptions = {}): { record: StoredRecord; moved: boolean } {
    const record = this.require(resource, id);
    const properties = this.checkBody(body);
    const { values, errors } = this.normalizeAll(resource, properties, options);
    if (resource === 'contacts' && (values.has('last_name') || values.has('email'))) {
      const lastName = values.has('last_name') ? values.get('last_name') : record.values['last_name'];
      const email = values.has('email') ? values.get('email') : record.values['email'];
      this.checkContactIdentity(errors, lastName, email);
    }
    if (errors.length > 0) throw validationError(errors);
    return { record, moved: this.apply(resource, record, values) };
  }

  private apply(resource: RecordResource, record: StoredRecord, values: Map<string, StoredValue>): boolean {
    const schema = this.schemas[resource];
    const before = this.lag.wantsSnapshots ? snapshot(record) : null;
    let moved = false;
    for (const [name, value] of values) {
      if (sameValue(record.values[name], value)) continue;
      record.values[name] = value;
      const role = (schema.get(name) as FieldSpec).role;
      if (role === 'plain' || role === 'aggregate') moved = true;
    }
    if (moved) {
      record.updatedAt = this.clock();
      this.stores[resource].touched();
      this.lag.changed(resource, record, before);
    }
    return moved;
  }

  /** Recording an activity moves its parent's aggregate, and hence the parent's updated_at. */
  private bumpParent(resource: ActivityResource, activity: StoredRecord): void {
    const { parent, link, dateField } = ACTIVITY_PARENT[resource];
    const parentId = activity.values[link];
    if (typeof parentId !== 'string') return;
    const parentRecord = this.stores[parent].get(parentId);
    if (!parentRecord) return;
    const count = parentRecord.values['activity_count'];
    const values = new Map<string, StoredValue>([['activity_count', (typeof count === 'number' ? count : 0) + 1]]);
    const date = activity.values[dateField];
    const at = typeof date === 'number' ? date : activity.createdAt;
    const last = parentRecord.values['last_activity_at'];
    if (typeof last !== 'number' || at > last) values.set('last_activity_at', at);
    this.apply(parent, parentRecord, values);
  }

  delete(resource: RecordResource, id: string): void {
    const record = this.require(resource, id);
    this.stores[resource].remove(id);
    this.lag.drop(resource, id);
    this.binned.set(`${resource}/${id}`, { record, summaries: this.summaries.get(id) });
    if (resource === 'meeting-logs') this.summaries.delete(id);
  }

  /**
   * A deleted record taken back out of the recycle bin: its values, and so its `updated_at`, as they were (the spec
   * moves `updated_at` only when values change). Immediate, as a deletion is. 404 when the bin does not hold it.
   */
  restore(resource: RecordResource, id: string): StoredRecord {
    const binned = this.binned.get(`${resource}/${id}`);
    if (!binned) throw notFound('ごみ箱にそのレコードはありません。');
    this.binned.delete(`${resource}/${id}`);
    this.stores[resource].insert(binned.record);
    if (binned.summaries) this.summaries.set(id, binned.summaries);
    return binned.record;
  }

  changeLink(resource: RecordResource, id: string, linkProperty: string, newId: string | null): StoredRecord {
    const spec = this.schemas[resource].get(linkProperty);
    if (!spec || spec.role !== 'link') throw invalidRequest(`${linkProperty} はリンク項目ではありません。`);
    const { record, moved } = this.patch(resource, id, { [linkProperty]: newId });
    if (moved) throw new Error('a link change moved updated_at'); // the rule above guarantees it never does
    return record;
  }

  /** The daily batch: recomputes predicted values without moving updated_at. */
  runPredictionBatch(): { deals: number; companies: number } {
    this.predictionRuns += 1;
    const prng = createPrng(deriveSeed(this.seed, `predictions#${this.predictionRuns}`));
    let deals = 0;
    for (const deal of this.stores.deals.values()) {
      const stage = deal.values['stage'];
      const next = stage === 'stg_won' ? 100 : stage === 'stg_lost' ? 0 : prng.between(5, 95);
      if (!sameValue(deal.values['win_probability'], next)) deals += 1;
      deal.values['win_probability'] = next;
    }
    let companies = 0;
    for (const company of this.stores.companies.values()) {
      const next = prng.between(0, 1000) / 10;
      if (!sameValue(company.values['health_score'], next)) companies += 1;
      company.values['health_score'] = next;
    }
    return { deals, companies };
  }

  /**
   * A service that corrected its clock: updated_at set to any instant, earlier ones included, values unchanged.
   * Immediate: a pending (lagging) version of the record is dropped so readers see this one.
   */
  setUpdatedAt(resource: RecordResource, id: string, iso: string): StoredRecord {
    const record = this.require(resource, id);
    const parsed = typeof iso === 'string' ? parseTimestamp(iso) : null;
    const micros = parsed ? parsed.micros : typeof iso === 'string' ? parseDate(iso) : null;
    if (micros === null) throw invalidRequest('updated_at は ISO 8601 形式 (タイムゾーン付き) で指定してください。');
    record.updatedAt = micros;
    this.stores[resource].touched();
    this.lag.drop(resource, id);
    return record;
  }

  // ---- summaries -------------------------------------------------------------------------------------------

  setSummaries(logId: string, inputs: SummaryInput[]): StoredSummary[] {
    this.require('meeting-logs', logId);
    if (!Array.isArray(inputs)) throw invalidRequest('summaries は配列で指定してください。');
    const summaries = inputs.map((input): StoredSummary => {
      if (typeof input?.summary_type !== 'string' || typeof input.result_type !== 'string') {
        throw invalidRequest('summary_type と result_type は必須です。');
      }
      return {
        summary_type: input.summary_type,
        result_type: input.result_type,
        text: input.text ?? null,
        selections: (input.selections ?? []).map((s) => ({ value: s.value, level: s.level, order: s.order })),
        reason: input.reason ?? '',
        status: input.status ?? (this.summaryStatuses.final[0] as string),
        updatedAt: this.clock(),
      };
    });
    this.summaries.set(logId, summaries);
    return summaries;
  }

  // ---- property definitions --------------------------------------------------------------------------------

  private requireField(resource: RecordResource, apiName: string, customOnly: boolean): FieldSpec {
    const spec = this.schemas[resource].get(apiName);
    if (!spec) throw notFound(`項目 ${apiName} は存在しません。`);
    if (customOnly && spec.def.is_core) throw invalidRequest(`標準項目 ${apiName} は変更できません。`);
    return spec;
  }

  addProperty(
    resource: RecordResource,
    def: { api_name?: string; display_name: string; property_type: string; options?: PropertyOption[] },
  ): PropertyDefinition {
    const schema = this.schemas[resource];
    if (!isPropertyType(def.property_type)) throw invalidRequest(`未対応の項目タイプです: ${def.property_type}`);
    let apiName = def.api_name;
    if (apiName === undefined) {
      do apiName = randomBase62(this.changePrng, 8);
      while (schema.get(apiName));
    }
    if (!isCustomApiName(apiName)) throw invalidRequest('カスタム項目の api_name は英数字8文字です。');
    if (schema.get(apiName)) throw invalidRequest(`項目 ${apiName} は既に存在します。`);
    const spec: FieldSpec = {
      def: {
        api_name: apiName,
        display_name: def.display_name,
        property_type: def.property_type,
        is_core: false,
        is_required_on_create: false,
        options: (def.options ?? []).map((o) => ({ value: o.value, label: o.label })),
      },
      type: def.property_type,
      role: 'plain',
    };
    schema.add(spec);
    return { ...spec.def, options: spec.def.options.map((o) => ({ ...o })) };
  }

  updatePropertyOptions(resource: RecordResource, apiName: string, options: PropertyOption[]): PropertyDefinition {
    const spec = this.requireField(resource, apiName, false);
    if (spec.type !== 'select' && spec.type !== 'multi_select') throw invalidRequest('選択肢を持たない項目です。');
    // Values no longer among the options stay stored, as in the real service.
    spec.def.options = options.map((o) => ({ value: o.value, label: o.label }));
    return { ...spec.def, options: spec.def.options.map((o) => ({ ...o })) };
  }

  renameProperty(resource: RecordResource, apiName: string, displayName: string): PropertyDefinition {
    const spec = this.requireField(resource, apiName, false);
    spec.def.display_name = displayName;
    return { ...spec.def, options: spec.def.options.map((o) => ({ ...o })) };
  }

  /** Converts stored values; like every definition change it does not move updated_at. */
  changePropertyType(resource: RecordResource, apiName: string, newType: string): PropertyDefinition {
    const spec = this.requireField(resource, apiName, true);
    if (!isPropertyType(newType)) throw invalidRequest(`未対応の項目タイプです: ${newType}`);
    const from = spec.type;
    for (const record of [...this.stores[resource].values(), ...this.lag.snapshots(resource)]) {
      const value = record.values[apiName];
      if (value !== undefined) record.values[apiName] = convertValue(value, from, newType);
    }
    spec.type = newType;
    spec.def.property_type = newType;
    if (newType !== 'select' && newType !== 'multi_select') spec.def.options = [];
    return { ...spec.def, options: spec.def.options.map((o) => ({ ...o })) };
  }

  removeProperty(resource: RecordResource, apiName: string): void {
    this.requireField(resource, apiName, true);
    this.schemas[resource].remove(apiName);
    for (const record of [...this.stores[resource].values(), ...this.lag.snapshots(resource)]) delete record.values[apiName];
  }

  // ---- users -----------------------------------------------------------------------------------------------

  addUser(user: { email: string; name: string; is_active?: boolean }): StoredUser {
    if (typeof user?.email !== 'string' || typeof user.name !== 'string') {
      throw invalidRequest('email と name は必須です。');
    }
    const stored: StoredUser = { id: this.newId(), email: user.email, name: user.name, isActive: user.is_active ?? true };
    this.insertUser(stored);
    return stored;
  }

  setUserActive(id: string, isActive: boolean): StoredUser {
    const user = this.users.get(id);
    if (!user) throw notFound();
    user.isActive = isActive;
    return user;
  }

  /** The organization removes a user in its administration screen: gone from the list and the single view. */
  removeUser(id: string): void {
    if (!this.users.delete(id)) throw notFound();
    this.usersSorted = null;
  }
}
