/**
 * The property policy applied as records arrive: a SalesApi that hands out only policy-applied records,
 * definitions and quarantine entries, so nothing downstream (rows, `_properties`, history, content hashes,
 * quarantine, snapshots, exports) ever sees an excluded value or a hashed one in clear. And what a change of
 * policy means for what a warehouse already stores (`propertiesToPurge`). Pure but for the HMAC.
 */
import { createHmac } from 'node:crypto';
import { InvalidRecordError } from '../api/index.js';
import type { ListOptions, ListPage, SalesApi, SearchRequest } from '../api/types.js';
import { SalesyncError } from '../core/errors.js';
import {
  appliedPolicy,
  describePolicy,
  isEmptyPolicy,
  treatmentOf,
  type AppliedPolicy,
  type PropertyPolicy,
  type ResourcePolicy,
  type Treatment,
} from '../core/property-policy.js';
import type { RecordResourceName } from '../core/resources.js';
import type { PropertyDefinition, PropertyValue, RejectedRecord, ServiceRecord } from '../core/types.js';
import type { Warehouse } from '../warehouse/types.js';
import type { Logger } from 'pino';

/** HMAC-SHA-256 of a value's text (numbers and booleans as JSON writes them), hex; null stays null. */
export function hashValue(secret: string, value: PropertyValue): string | null {
  if (value === null) return null;
  return createHmac('sha256', secret).update(String(value)).digest('hex');
}

/** Applies one configuration's policy; remembers each resource's definitions to tell custom properties apart. */
export class PolicyApplier {
  private readonly isCore = new Map<RecordResourceName, Map<string, boolean>>();

  constructor(
    readonly policy: PropertyPolicy,
    private readonly secret: string | null,
  ) {}

  /** Whether this policy changes anything for `resource`. */
  affects(resource: RecordResourceName): boolean {
    return !isEmptyPolicy(this.policy[resource]);
  }

  /** What the warehouse records for `resource` (fingerprint with the secret's id). */
  applied(resource: RecordResourceName): AppliedPolicy {
    return appliedPolicy(this.policy[resource], this.secret);
  }

  treatment(resource: RecordResourceName, apiName: string, isCore?: boolean): Treatment {
    return treatmentOf(this.policy[resource], apiName, isCore ?? this.isCore.get(resource)?.get(apiName));
  }

  /** Excluded definitions removed (no column is ever made); hashed ones become text without options. */
  definitions(resource: RecordResourceName, definitions: readonly PropertyDefinition[]): PropertyDefinition[] {
    this.isCore.set(resource, new Map(definitions.map((d) => [d.api_name, d.is_core])));
    if (!this.affects(resource)) return [...definitions];
    return definitions.flatMap((d) => {
      const treatment = this.treatment(resource, d.api_name, d.is_core);
      if (treatment === 'exclude') return [];
      return treatment === 'hash' ? [{ ...d, property_type: 'text', options: [] }] : [d];
    });
  }

  /** A properties object with excluded keys left out and hashed values replaced. */
  properties(resource: RecordResourceName, properties: Record<string, PropertyValue>): Record<string, PropertyValue> {
    if (!this.affects(resource)) return properties;
    const out: Record<string, PropertyValue> = {};
    for (const [name, value] of Object.entries(properties)) {
      const treatment = this.treatment(resource, name);
      if (treatment === 'exclude') continue;
      if (treatment === 'keep') out[name] = value;
      else out[name] = this.hash(value);
    }
    return out;
  }

  record<T extends ServiceRecord>(resource: RecordResourceName, record: T): T {
    return this.affects(resource) ? { ...record, properties: this.properties(resource, record.properties) } : record;
  }

  /**
   * A quarantine entry whose raw text holds no excluded value: the element's `properties` policy-applied (any
   * value that is not a scalar is hashed or dropped alike). An element that is not JSON with an object at its
   * root keeps no raw text at all: nothing in it can be told apart.
   */
  reject(resource: RecordResourceName, reject: RejectedRecord): RejectedRecord {
    if (!this.affects(resource)) return reject;
    let element: unknown;
    try {
      element = JSON.parse(reject.raw);
    } catch {
      return { ...reject, raw: 'null' };
    }
    if (element === null || typeof element !== 'object' || Array.isArray(element)) return { ...reject, raw: 'null' };
    const { properties, ...rest } = element as { properties?: unknown };
    if (properties === undefined) return reject;
    if (properties === null || typeof properties !== 'object' || Array.isArray(properties)) {
      return { ...reject, raw: JSON.stringify({ ...rest, properties: null }) };
    }
    const kept: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(properties)) {
      const treatment = this.treatment(resource, name);
      if (treatment === 'exclude') continue;
      kept[name] =
        treatment === 'keep'
          ? value
          : this.hash(typeof value === 'object' && value !== null ? JSON.stringify(value) : (value as PropertyValue));
    }
    return { ...reject, raw: JSON.stringify({ ...rest, properties: kept }) };
  }

  private hash(value: PropertyValue): string | null {
    // The environment refuses to run a policy that hashes without a secret: this is a bug, never a silent clear value.
    if (this.secret === null) throw new SalesyncError('internal', 'a property policy hashes without a secret');
    return hashValue(this.secret, value);
  }
}

/** A policy-applied page: records and rejects. */
function page<T extends ServiceRecord>(applier: PolicyApplier, resource: RecordResourceName, p: ListPage<T>): ListPage<T> {
  if (!applier.affects(resource)) return p;
  return {
    ...p,
    results: p.results.map((r) => applier.record(resource, r)),
    rejects: p.rejects.map((r) => applier.reject(resource, r)),
  };
}

/** A single view that broke its schema carries the raw body: policy-applied before anyone logs or stores it. */
function policyError(applier: PolicyApplier, resource: RecordResourceName, error: unknown): unknown {
  if (!(error instanceof InvalidRecordError) || !applier.affects(resource)) return error;
  const reject = applier.reject(resource, { id: error.recordId, raw: error.raw, reason: error.reason });
  return new InvalidRecordError({ resource, id: error.recordId, raw: reject.raw, reason: error.reason, method: 'GET', path: error.path });
}

/**
 * A SalesApi whose every record, definition and reject of a record resource comes out policy-applied. Users are
 * not records (no properties): passed through.
 */
export function withPropertyPolicy(api: SalesApi, applier: PolicyApplier): SalesApi {
  return {
    async *listPages(resource: RecordResourceName, options?: ListOptions) {
      for await (const p of api.listPages(resource, options)) yield page(applier, resource, p);
    },
    listPage: async (resource, options) => page(applier, resource, await api.listPage(resource, options)),
    getRecord: async (resource, id, signal) => {
      try {
        return applier.record(resource, await api.getRecord(resource, id, signal));
      } catch (error) {
        throw policyError(applier, resource, error);
      }
    },
    getMeetingLog: async (id, signal, options) => {
      try {
        return applier.record('meeting-logs', await api.getMeetingLog(id, signal, options));
      } catch (error) {
        throw policyError(applier, 'meeting-logs', error);
      }
    },
    listProperties: async (resource, signal) => {
      const listed = await api.listProperties(resource, signal);
      return { ...listed, definitions: applier.definitions(resource, listed.definitions) };
    },
    search: async (resource, request: SearchRequest, signal) => page(applier, resource, await api.search(resource, request, signal)),
    listUserPages: (options) => api.listUserPages(options),
    listUserPage: (options) => api.listUserPage(options),
    getUser: (id, signal) => api.getUser(id, signal),
    stats: () => api.stats(),
    keyOfCursor: (cursor) => api.keyOfCursor(cursor),
    get keyFingerprint() {
      return api.keyFingerprint;
    },
    get keyFingerprints() {
      return api.keyFingerprints;
    },
  };
}

/** A property a warehouse stores for a resource: from its definitions, or a key of stored `_properties`. */
export interface StoredProperty {
  apiName: string;
  /** From its stored definition; undefined when it has none. */
  isCore: boolean | undefined;
}

/**
 * The stored properties a change of policy makes wrong as they are: a property whose treatment changed (newly
 * excluded or not included, newly hashed, no longer hashed), and every hashed one when the secret changed.
 * `before` null: the data was written with no policy.
 */
export function propertiesToPurge(
  stored: readonly StoredProperty[],
  before: Pick<AppliedPolicy, 'policy' | 'keyId'> | null,
  after: Pick<AppliedPolicy, 'policy' | 'keyId'>,
): string[] {
  const was = (p: StoredProperty) => treatmentOf(before?.policy as ResourcePolicy | undefined, p.apiName, p.isCore);
  const now = (p: StoredProperty) => treatmentOf(after.policy, p.apiName, p.isCore);
  const purge = stored.filter((p) => {
    const old = was(p);
    const next = now(p);
    // Stored and excluded now: purged, whatever the old policy says (a copy taken over from elsewhere).
    if (next === 'exclude') return true;
    if (old === 'exclude') return false; // nothing of it was stored
    return old !== next || (next === 'hash' && (before?.keyId ?? null) !== after.keyId);
  });
  return [...new Set(purge.map((p) => p.apiName))].sort();
}

/**
 * Before a run of `resource` writes anything: when the policy differs from the one its stored data was written
 * under, purge what the new one does not allow as stored, and make the next walk full (it brings back hashed and
 * newly included values). One info line names the properties purged, never a value. A no-op on every other run.
 */
export async function enforcePropertyPolicy(
  warehouse: Warehouse,
  applier: PolicyApplier,
  resource: RecordResourceName,
  log: Logger,
): Promise<void> {
  const applied = applier.applied(resource);
  const stored = await warehouse.storedPropertyPolicy(resource);
  if (stored?.fingerprint === applied.fingerprint) return;
  if (stored === null && !applier.affects(resource)) return;
  const purge = propertiesToPurge(await warehouse.storedProperties(resource), stored, applied);
  const result = await warehouse.applyPropertyPolicy(resource, applied, purge);
  const line = { resource, policy: describePolicy(applied.policy), purged: purge, columns: result.columns, compacted: result.compacted };
  log.info(
    line,
    purge.length > 0
      ? 'property policy changed: purged properties it no longer allows as stored, compacted the file; this walk is a full one'
      : 'property policy changed: nothing stored to purge; this walk is a full one',
  );
}
