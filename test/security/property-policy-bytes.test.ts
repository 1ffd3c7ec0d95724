/**
 * The property policy's promise: with `email` excluded and `phone` hashed on contacts, no byte of any contact's
 * e-mail address is in the writer's file, its WAL, the published copy or an export, and equal phones hash equal
 * (to the HMAC of the value). Excluding a property stored before purges it on the next run, compacting the file.
 * The files are searched as raw bytes; the export's Parquet (whose pages are compressed) is also read back.
 */
import { createHmac } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import type { PropertyPolicy } from '../../src/core/property-policy.js';
import { createWarehouse } from '../../src/sync/environment.js';
import { writerPathFor } from '../../src/warehouse/index.js';
import { startHarness, type Harness } from '../support/harness.js';

const SECRET = 'test-secret-of-the-hmac-0123456789';
const SIZE = { deals: 20, companies: 10, contacts: 120, meetingLogs: 2, contactActivities: 10, users: 4 };
const POLICY: PropertyPolicy = { contacts: { include: null, exclude: ['email'], hash: ['phone'] } };
const silent = pino({ level: 'silent' });

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** Contacts' addresses (and the users' ones left out: the users table holds those by design). */
function contactEmails(h: Harness): string[] {
  const truth = h.sim.admin.truth();
  const users = new Set(truth.users.map((u) => u.email.toLowerCase()));
  const emails = truth.records.contacts.map((c) => c.properties.email).filter((e): e is string => typeof e === 'string' && e.length > 0);
  return [...new Set(emails)].filter((e) => !users.has(e.toLowerCase()));
}

/** Every file the warehouse leaves behind: the writer's file and WAL, the published copy and its WAL. */
function warehouseFiles(h: Harness): string[] {
  const writer = writerPathFor(h.config.warehousePath);
  return [writer, `${writer}.wal`, h.config.warehousePath, `${h.config.warehousePath}.wal`].filter((f) => existsSync(f));
}

/** The addresses whose bytes appear in any of `files`. */
function inBytes(files: readonly string[], needles: readonly string[]): string[] {
  const contents = files.map((f) => readFileSync(f));
  return needles.filter((n) => contents.some((c) => c.includes(Buffer.from(n, 'utf8'))));
}

/** Export the published warehouse and read every row of every Parquet file back as JSON text. */
async function exportText(h: Harness, name: string): Promise<{ files: string[]; text: string }> {
  const out = join(h.dir, name);
  const reader = createWarehouse(h.config, silent);
  try {
    await reader.exportParquet(out);
  } finally {
    await reader.close();
  }
  const files = readdirSync(out).map((f) => join(out, f));
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  let text = '';
  try {
    for (const file of files) {
      const rows = await connection.runAndReadAll(`SELECT CAST(to_json(t) AS VARCHAR) AS j FROM read_parquet('${file}') AS t`);
      text += rows
        .getRowObjects()
        .map((r) => String(r.j))
        .join('\n');
    }
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
  return { files, text };
}

async function syncWith(h: Harness, policy: PropertyPolicy, extra: Partial<Config> = {}): Promise<void> {
  const report = await h.sync({ config: { propertyPolicy: policy, hashKey: SECRET, ...extra } });
  expect(report.results.map((r) => [r.resource, r.outcome, r.error?.message ?? null])).toEqual(
    report.results.map((r) => [r.resource, expect.stringMatching(/^succeeded/), null]),
  );
}

async function contactsRows(h: Harness): Promise<Record<string, unknown>[]> {
  const reader = createWarehouse(h.config, silent);
  try {
    return await reader.query(`SELECT id, phone, CAST(_properties AS VARCHAR) AS props FROM contacts ORDER BY id`);
  } finally {
    await reader.close();
  }
}

/** Equal phones hash equal, each to the HMAC of the service's value. */
async function expectPhonesHashed(h: Harness): Promise<void> {
  const truth = new Map(h.sim.admin.truth().records.contacts.map((c) => [c.id, c.properties.phone]));
  const rows = await contactsRows(h);
  let hashed = 0;
  for (const row of rows) {
    const phone = truth.get(String(row.id));
    if (typeof phone !== 'string') continue;
    const expected = createHmac('sha256', SECRET).update(phone).digest('hex');
    expect(row.phone).toBe(expected);
    expect(JSON.parse(String(row.props)).phone).toBe(expected);
    expect(String(row.props)).not.toContain('"email"');
    hashed += 1;
  }
  expect(hashed).toBeGreaterThan(10);
}

describe('the property policy, byte by byte', () => {
  it('with email excluded and phone hashed on contacts, no e-mail address is in the writer file, its WAL, the published copy or an export', async () => {
    harness = await startHarness({ seed: 4401, size: SIZE });
    const h = harness;
    const emails = contactEmails(h);
    expect(emails.length).toBeGreaterThan(50);
    // A contact sent broken (its id cut short) goes to quarantine with its raw element: without its address.
    const broken = h.sim.admin.truth().records.contacts.find((c) => typeof c.properties.email === 'string')!;
    h.sim.admin.corruptRecord('contacts', broken.id, 'short_id');
    // Two contacts with the same phone hash the same.
    const [a, b] = h.sim.admin.truth().records.contacts.filter((c) => c.id !== broken.id && typeof c.properties.phone === 'string');
    h.sim.admin.updateRecord('contacts', b!.id, { phone: a!.properties.phone as string });

    await syncWith(h, POLICY);

    const exported = await exportText(h, 'export');
    expect(inBytes([...warehouseFiles(h), ...exported.files], emails)).toEqual([]);
    expect(emails.filter((e) => exported.text.includes(e))).toEqual([]);

    const rows = await contactsRows(h);
    const hashOf = (id: string) => rows.find((r) => r.id === id)?.phone;
    expect(hashOf(a!.id)).toBe(hashOf(b!.id));
    expect(hashOf(a!.id)).toMatch(/^[0-9a-f]{64}$/);
    await expectPhonesHashed(h);
    const reader = createWarehouse(h.config, silent);
    const rejected = await reader.query(`SELECT raw FROM rejected_records WHERE resource = 'contacts'`).finally(() => reader.close());
    expect(rejected.length).toBe(1);
    expect(String(rejected[0]!.raw)).not.toContain('"email"');
  });

  it('excluding a property stored before purges it on the next run: no address left in any file, hashed values filled by the full walk', async () => {
    harness = await startHarness({ seed: 4402, size: SIZE });
    const h = harness;
    const emails = contactEmails(h);
    await syncWith(h, {});
    // Without the policy the test finds them: the search is not blind.
    expect(inBytes(warehouseFiles(h), emails).length).toBeGreaterThan(emails.length / 2);

    await syncWith(h, POLICY);

    expect(inBytes(warehouseFiles(h), emails)).toEqual([]);
    const exported = await exportText(h, 'export-after');
    expect(inBytes(exported.files, emails)).toEqual([]);
    expect(emails.filter((e) => exported.text.includes(e))).toEqual([]);
    await expectPhonesHashed(h);
  });
});
