/**
 * The property policy without I/O: reading it from the configuration file, what it does to each property, to
 * definitions, records and quarantine entries, the client that applies it, and what a change of it purges.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvalidRecordError } from '../../src/api/index.js';
import { loadConfig, requireHashKey } from '../../src/config.js';
import type { ListPage, SalesApi } from '../../src/api/types.js';
import { appliedPolicy, parsePropertyPolicy, treatmentOf, type PropertyPolicy } from '../../src/core/property-policy.js';
import type { PropertyDefinition, ServiceRecord } from '../../src/core/types.js';
import { PolicyApplier, propertiesToPurge, withPropertyPolicy } from '../../src/sync/property-policy.js';

const SECRET = 'a-secret-of-sixteen-or-more';
const hmac = (value: string) => createHmac('sha256', SECRET).update(value).digest('hex');
const parse = (value: unknown) => parsePropertyPolicy(value, 'salesync.config.json');

function definition(api_name: string, is_core: boolean, property_type = 'text'): PropertyDefinition {
  return { api_name, display_name: api_name, property_type, is_core, is_required_on_create: false, options: [{ value: 'a', label: 'A' }] };
}

const contact: ServiceRecord = {
  id: 'a'.repeat(18),
  properties: { email: 'taro@example.com', phone: '090-1234-5678', last_name: '山田', ab12cd34: 'custom value', score: 12 },
  created_at: '2024-01-01T00:00:00Z',
  updated_at: '2024-01-02T00:00:00Z',
};

describe('reading the policy', () => {
  it('takes include, exclude and hash per record resource', () => {
    expect(parse({ contacts: { exclude: ['email'], hash: ['phone'] }, deals: { include: ['name', 'custom:*'] } })).toEqual({
      contacts: { include: null, exclude: ['email'], hash: ['phone'] },
      deals: { include: ['name', 'custom:*'], exclude: [], hash: [] },
    });
    expect(parse(undefined)).toEqual({});
  });

  it.each([
    [{ people: { exclude: ['email'] } }, 'properties.people is not a resource with properties'],
    [{ users: { exclude: ['email'] } }, 'users have no properties'],
    [{ contacts: { exclude: 'email' } }, 'properties.contacts.exclude must be an array'],
    [{ contacts: { exclude: ['email', 3] } }, 'properties.contacts.exclude[1] must be a non-empty api_name'],
    [{ contacts: { exclude: ['updated_at'] } }, 'properties.contacts.exclude[0] names "updated_at", part of every record\'s envelope'],
    [{ contacts: { hide: ['email'] } }, 'properties.contacts.hide is not include, exclude or hash'],
    [{ contacts: { exclude: ['email'], hash: ['email'] } }, 'properties.contacts.exclude[0] "email" is also in hash'],
    [{ contacts: { include: ['name'], hash: ['phone'] } }, 'properties.contacts.hash[0] "phone" is not in include'],
    [{ contacts: { include: ['core:*'] } }, 'properties.contacts.include[0] must be an api_name or "custom:*"'],
    [['contacts'], 'properties must be an object of resources'],
  ])('refuses %j naming the key', (value, message) => {
    expect(() => parse(value)).toThrow(
      expect.objectContaining({ code: 'invalid_property_policy', message: expect.stringContaining(message) }),
    );
  });
});

describe('what the policy does to a property', () => {
  const policy = parse({
    contacts: { include: ['email', 'phone', 'last_name', 'custom:*'], exclude: ['ab12cd34'], hash: ['phone'] },
  }).contacts;

  it('include narrows, exclude removes from what it let through, hash applies to the rest', () => {
    expect(treatmentOf(policy, 'email', true)).toBe('keep');
    expect(treatmentOf(policy, 'phone', true)).toBe('hash');
    expect(treatmentOf(policy, 'first_name', true)).toBe('exclude');
    expect(treatmentOf(policy, 'zz99yy88', false)).toBe('keep');
    expect(treatmentOf(policy, 'ab12cd34', false)).toBe('exclude');
  });

  it('custom:* follows is_core; a key without a definition is custom when it has a custom api_name shape', () => {
    const p = parse({ deals: { exclude: ['custom:*'] } }).deals;
    expect(treatmentOf(p, 'amount', true)).toBe('keep');
    expect(treatmentOf(p, 'long_core_name', false)).toBe('exclude');
    expect(treatmentOf(p, 'ab12cd34', undefined)).toBe('exclude');
    expect(treatmentOf(p, 'amount', undefined)).toBe('keep');
  });
});

describe('PolicyApplier', () => {
  const policy: PropertyPolicy = parse({ contacts: { exclude: ['email', 'custom:*'], hash: ['phone', 'score'] } });
  const applier = new PolicyApplier(policy, SECRET);

  it('drops excluded definitions and makes hashed ones text without options', () => {
    const out = applier.definitions('contacts', [
      definition('email', true),
      definition('phone', true, 'select'),
      definition('score', true, 'number'),
      definition('last_name', true),
      definition('ab12cd34', false),
    ]);
    expect(out.map((d) => [d.api_name, d.property_type, d.options.length])).toEqual([
      ['phone', 'text', 0],
      ['score', 'text', 0],
      ['last_name', 'text', 1],
    ]);
  });

  it('leaves excluded values out and hashes the hashed ones (HMAC-SHA-256 of the text, equal values equal)', () => {
    const out = applier.record('contacts', contact);
    expect(out.properties).toEqual({ phone: hmac('090-1234-5678'), last_name: '山田', score: hmac('12') });
    expect(applier.record('contacts', { ...contact, id: 'b'.repeat(18) }).properties.phone).toBe(out.properties.phone);
    expect(applier.record('contacts', { ...contact, properties: { phone: null } }).properties).toEqual({ phone: null });
    // Other resources are untouched.
    expect(applier.record('deals', contact)).toBe(contact);
  });

  it('keeps no excluded value in a quarantine entry', () => {
    const raw = JSON.stringify({ id: 'short', properties: { email: 'taro@example.com', phone: { nested: 1 }, last_name: 'x' } });
    const out = applier.reject('contacts', { id: 'short', raw, reason: 'id: bad' });
    expect(JSON.parse(out.raw)).toEqual({ id: 'short', properties: { phone: hmac('{"nested":1}'), last_name: 'x' } });
    expect(applier.reject('contacts', { id: null, raw: '"taro@example.com"', reason: 'x' }).raw).toBe('null');
    expect(
      JSON.parse(applier.reject('contacts', { id: null, raw: '{"id":"x","properties":"taro@example.com"}', reason: 'x' }).raw),
    ).toEqual({
      id: 'x',
      properties: null,
    });
  });
});

describe('withPropertyPolicy', () => {
  const applier = new PolicyApplier(parse({ contacts: { exclude: ['email'] } }), SECRET);
  const listed: ListPage<ServiceRecord> = {
    results: [contact],
    nextCursor: null,
    serverDate: null,
    rejects: [{ id: 'x', raw: JSON.stringify({ id: 'x', properties: { email: 'hidden@example.com' } }), reason: 'id: bad' }],
  };
  const inner = {
    listPages: async function* () {
      yield listed;
    },
    listPage: async () => listed,
    getRecord: async () => contact,
    getMeetingLog: async () => ({ ...contact, summaries: [] }),
    search: async () => listed,
    listProperties: async () => ({ definitions: [definition('email', true), definition('phone', true)], serverDate: null }),
    stats: () => ({ requests: 7, retries: 0, rateLimited: 0, throttledMs: 0 }),
    keyFingerprint: 'sk_…12345678',
  } as unknown as SalesApi;
  const api = withPropertyPolicy(inner, applier);

  it('every record, definition and reject of a record resource comes out policy-applied', async () => {
    for await (const page of api.listPages('contacts')) {
      expect(page.results[0]!.properties).not.toHaveProperty('email');
      expect(page.rejects[0]!.raw).not.toContain('hidden@example.com');
    }
    expect((await api.listPage('contacts')).results[0]!.properties).not.toHaveProperty('email');
    expect((await api.search('contacts', {})).results[0]!.properties).not.toHaveProperty('email');
    expect((await api.getRecord('contacts', contact.id)).properties).not.toHaveProperty('email');
    expect((await api.listProperties('contacts')).definitions.map((d) => d.api_name)).toEqual(['phone']);
    expect(api.stats().requests).toBe(7);
    expect(api.keyFingerprint).toBe('sk_…12345678');
  });

  it('a single view that broke its schema is quarantined without the excluded value', async () => {
    const broken = withPropertyPolicy(
      {
        ...inner,
        getRecord: () =>
          Promise.reject(
            new InvalidRecordError({
              resource: 'contacts',
              id: contact.id,
              raw: JSON.stringify({ ...contact, updated_at: 'x' }),
              reason: 'updated_at: bad',
              method: 'GET',
              path: '/v1/contacts/x',
            }),
          ),
      } as SalesApi,
      applier,
    );
    const error = (await broken.getRecord('contacts', contact.id).catch((e: unknown) => e)) as InvalidRecordError;
    expect(error).toBeInstanceOf(InvalidRecordError);
    expect(error.raw).not.toContain('taro@example.com');
    expect(JSON.stringify(error.context)).not.toContain('taro@example.com');
  });
});

describe('a change of policy', () => {
  const stored = [
    { apiName: 'email', isCore: true },
    { apiName: 'phone', isCore: true },
    { apiName: 'last_name', isCore: true },
    { apiName: 'ab12cd34', isCore: false },
    { apiName: 'zz99yy88', isCore: undefined },
  ];
  const applied = (value: unknown, secret: string | null = SECRET) => appliedPolicy(parse({ contacts: value }).contacts, secret);

  it('purges what is newly excluded, not included, newly hashed or no longer hashed', () => {
    expect(propertiesToPurge(stored, null, applied({ exclude: ['email'], hash: ['phone'] }))).toEqual(['email', 'phone']);
    expect(propertiesToPurge(stored, null, applied({ include: ['email', 'phone', 'last_name'] }))).toEqual(['ab12cd34', 'zz99yy88']);
    expect(propertiesToPurge(stored, applied({ hash: ['phone'] }), applied({}))).toEqual(['phone']);
    expect(propertiesToPurge(stored, applied({ exclude: ['custom:*'] }), applied({}))).toEqual([]);
    expect(propertiesToPurge(stored, applied({ hash: ['phone'] }), applied({ hash: ['phone'] }))).toEqual([]);
  });

  it('a new secret purges every hashed property: old hashes would not join new ones', () => {
    const before = applied({ hash: ['phone'] });
    const after = applied({ hash: ['phone'] }, 'another-secret-sixteen+');
    expect(after.fingerprint).not.toBe(before.fingerprint);
    expect(propertiesToPurge(stored, before, after)).toEqual(['phone']);
  });

  it('the fingerprint ignores order and duplicates, and never holds the secret', () => {
    const a = applied({ exclude: ['email', 'phone'] });
    expect(applied({ exclude: ['phone', 'email', 'email'] }).fingerprint).toBe(a.fingerprint);
    expect(JSON.stringify(applied({ hash: ['phone'] }))).not.toContain(SECRET);
  });
});

describe('the configuration file', () => {
  const load = (file: unknown, env: Record<string, string> = {}) =>
    loadConfig(env, {}, { cwd: '/srv', readFile: (path) => (path === '/srv/salesync.config.json' ? JSON.stringify(file) : '{}') });

  it('holds the policy under `properties`, beside the settings; the secret comes from the environment', () => {
    const config = load(
      { SALESYNC_CONCURRENCY: 2, properties: { contacts: { exclude: ['email'], hash: ['phone'] } } },
      { SALESYNC_HASH_KEY: SECRET },
    );
    expect(config.resourceConcurrency).toBe(2);
    expect(config.propertyPolicy).toEqual({ contacts: { include: null, exclude: ['email'], hash: ['phone'] } });
    expect(config.hashKey).toBe(SECRET);
    expect(() => requireHashKey(config)).not.toThrow();
  });

  it('a policy that hashes needs SALESYNC_HASH_KEY: missing_hash_key names it; a short one is refused unseen', () => {
    const config = load({ properties: { contacts: { hash: ['phone'] } } });
    expect(() => requireHashKey(config)).toThrow(
      expect.objectContaining({ code: 'missing_hash_key', message: expect.stringMatching(/^SALESYNC_HASH_KEY is not set/) }),
    );
    const short = load({ properties: { contacts: { hash: ['phone'] } } }, { SALESYNC_HASH_KEY: 'short-secret' });
    expect(() => requireHashKey(short)).toThrow(
      expect.objectContaining({ code: 'invalid_config', message: expect.not.stringContaining('short-secret') }),
    );
    // No hash, no secret needed.
    expect(() => requireHashKey(load({ properties: { contacts: { exclude: ['email'] } } }))).not.toThrow();
  });

  it('refuses the secret in the file, and a bad policy naming the key', () => {
    expect(() => load({ SALESYNC_HASH_KEY: SECRET })).toThrow(expect.objectContaining({ code: 'invalid_config_file' }));
    expect(() => load({ properties: { contacts: { exclude: [''] } } })).toThrow(
      /properties\.contacts\.exclude\[0\] must be a non-empty api_name/,
    );
  });
});
