/**
 * The property policy: per record resource, which properties salesync keeps (`include`), drops (`exclude`) and
 * keeps only as an HMAC-SHA-256 (`hash`), by `api_name`, with `custom:*` standing for every custom property. Read
 * from the configuration file's `properties` object; pure data and decisions, no I/O.
 *
 * Meaning: a property is excluded when `include` is given and does not name it, or when `exclude` names it;
 * otherwise it is hashed when `hash` names it; otherwise it is kept as sent. So `include` narrows first and
 * `exclude` then removes from what it let through (`include: ["custom:*"], exclude: ["ab12cd34"]`). A name listed
 * literally in two lists that contradict each other is refused, so no one has to remember who wins.
 */
import { createHash } from 'node:crypto';
import { ConfigError, shown } from './errors.js';
import { RECORD_RESOURCE_NAMES, type RecordResourceName } from './resources.js';

/** Every custom property (a definition with `is_core` false). */
export const CUSTOM_WILDCARD = 'custom:*';

/** The record envelope: never a property, always kept. */
export const ENVELOPE_FIELDS: readonly string[] = ['id', 'created_at', 'updated_at'];

/** Custom properties' `api_name` per the spec, used for a key that arrives without a definition. */
const CUSTOM_API_NAME = /^[A-Za-z0-9]{8}$/;

export interface ResourcePolicy {
  /** Only these are kept (null: every property). */
  include: readonly string[] | null;
  exclude: readonly string[];
  hash: readonly string[];
}

export type PropertyPolicy = Partial<Record<RecordResourceName, ResourcePolicy>>;

export type Treatment = 'keep' | 'hash' | 'exclude';

/** The environment variable holding the HMAC secret of `hash`. */
export const HASH_KEY_VARIABLE = 'SALESYNC_HASH_KEY';

/** Shortest secret accepted: an HMAC key much shorter than its output can be guessed from equal hashes. */
export const MIN_HASH_KEY_LENGTH = 16;

const LISTS = ['include', 'exclude', 'hash'] as const;

function fail(where: string, message: string, key: string): never {
  throw new ConfigError('invalid_property_policy', `${where}: ${key} ${message}`, { key });
}

/**
 * The `properties` object of the configuration file, checked: every problem is a one-line `invalid_property_policy`
 * naming its key (`properties.contacts.exclude[0]`). `where` names the file.
 */
export function parsePropertyPolicy(value: unknown, where: string): PropertyPolicy {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    fail(where, 'must be an object of resources, e.g. {"contacts": {"exclude": ["email"]}}', 'properties');
  const policy: PropertyPolicy = {};
  for (const [resource, spec] of Object.entries(value)) {
    const key = `properties.${resource}`;
    if (!(RECORD_RESOURCE_NAMES as readonly string[]).includes(resource)) {
      const hint = resource === 'users' ? 'users have no properties' : `resources with properties: ${RECORD_RESOURCE_NAMES.join(', ')}`;
      fail(where, `is not a resource with properties (${hint})`, key);
    }
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec))
      fail(where, 'must be an object with include, exclude or hash', key);
    const lists: Record<(typeof LISTS)[number], string[] | null> = { include: null, exclude: null, hash: null };
    for (const [name, list] of Object.entries(spec as Record<string, unknown>)) {
      if (!(LISTS as readonly string[]).includes(name)) fail(where, 'is not include, exclude or hash', `${key}.${name}`);
      if (!Array.isArray(list)) fail(where, 'must be an array of api_names', `${key}.${name}`);
      const names: string[] = [];
      list.forEach((item: unknown, index) => {
        const at = `${key}.${name}[${index}]`;
        if (typeof item !== 'string' || item.trim() === '') fail(where, 'must be a non-empty api_name', at);
        if (ENVELOPE_FIELDS.includes(item)) fail(where, `names "${item}", part of every record's envelope: it is always kept`, at);
        if (item.includes(':') && item !== CUSTOM_WILDCARD)
          fail(where, `must be an api_name or "${CUSTOM_WILDCARD}" (got ${shown(item)})`, at);
        names.push(item);
      });
      lists[name as (typeof LISTS)[number]] = names;
    }
    const exclude = lists.exclude ?? [];
    const hash = lists.hash ?? [];
    const include = lists.include;
    exclude.forEach((name, index) => {
      if (hash.includes(name)) fail(where, `"${name}" is also in hash: a property is either dropped or hashed`, `${key}.exclude[${index}]`);
      if (include?.includes(name)) fail(where, `"${name}" is also in include: list it in one of them`, `${key}.exclude[${index}]`);
    });
    if (include) {
      hash.forEach((name, index) => {
        const covered =
          include.includes(name) || (include.includes(CUSTOM_WILDCARD) && name !== CUSTOM_WILDCARD && CUSTOM_API_NAME.test(name));
        if (!covered) fail(where, `"${name}" is not in include, so it is dropped, not hashed: include it too`, `${key}.hash[${index}]`);
      });
    }
    policy[resource as RecordResourceName] = { include, exclude, hash };
  }
  return policy;
}

/** Whether any resource hashes something (the secret is then required). */
export function policyHashes(policy: PropertyPolicy): boolean {
  return Object.values(policy).some((p) => p.hash.length > 0);
}

/** A property is custom when its definition says so; a key with no definition known, when it has a custom api_name's shape. */
export function isCustomProperty(apiName: string, isCore: boolean | undefined): boolean {
  return isCore === undefined ? CUSTOM_API_NAME.test(apiName) : !isCore;
}

function names(list: readonly string[], apiName: string, custom: boolean): boolean {
  return list.includes(apiName) || (custom && list.includes(CUSTOM_WILDCARD));
}

/** What the policy does to one property (`isCore` from its definition; undefined when none is known). */
export function treatmentOf(policy: ResourcePolicy | undefined, apiName: string, isCore: boolean | undefined): Treatment {
  if (!policy) return 'keep';
  const custom = isCustomProperty(apiName, isCore);
  if (policy.include && !names(policy.include, apiName, custom)) return 'exclude';
  if (names(policy.exclude, apiName, custom)) return 'exclude';
  if (names(policy.hash, apiName, custom)) return 'hash';
  return 'keep';
}

/** A policy that changes nothing. */
export function isEmptyPolicy(policy: ResourcePolicy | undefined): boolean {
  return !policy || (policy.include === null && policy.exclude.length === 0 && policy.hash.length === 0);
}

/** The lists in a canonical order: what is stored and compared. */
export function canonicalPolicy(policy: ResourcePolicy | undefined): ResourcePolicy {
  const sorted = (list: readonly string[]) => [...new Set(list)].sort();
  return {
    include: policy?.include ? sorted(policy.include) : null,
    exclude: sorted(policy?.exclude ?? []),
    hash: sorted(policy?.hash ?? []),
  };
}

/**
 * What a warehouse records of the policy a resource's data was written under: the canonical lists and, when
 * something is hashed, an id of the secret (a different secret gives different hashes, so it counts as a change).
 */
export interface AppliedPolicy {
  policy: ResourcePolicy;
  /** `keyId(secret)` when `hash` is not empty, else null. */
  keyId: string | null;
  /** SHA-256 of the above, as hex. */
  fingerprint: string;
}

/** A non-secret name of the HMAC secret: SHA-256 of a label and the secret, 16 hex digits. */
export function keyId(secret: string): string {
  return createHash('sha256').update(`salesync property hash key\0${secret}`).digest('hex').slice(0, 16);
}

export function appliedPolicy(policy: ResourcePolicy | undefined, secret: string | null): AppliedPolicy {
  const canonical = canonicalPolicy(policy);
  const id = canonical.hash.length > 0 && secret !== null ? keyId(secret) : null;
  const fingerprint = createHash('sha256')
    .update(JSON.stringify({ ...canonical, keyId: id }))
    .digest('hex');
  return { policy: canonical, keyId: id, fingerprint };
}

/** One line per list, for `status` and logs: `exclude email; hash phone`, or `all properties kept`. */
export function describePolicy(policy: ResourcePolicy | undefined): string {
  if (isEmptyPolicy(policy)) return 'all properties kept';
  const parts: string[] = [];
  if (policy!.include) parts.push(`include ${policy!.include.join(', ')}`);
  if (policy!.exclude.length > 0) parts.push(`exclude ${policy!.exclude.join(', ')}`);
  if (policy!.hash.length > 0) parts.push(`hash ${policy!.hash.join(', ')}`);
  return parts.join('; ');
}
