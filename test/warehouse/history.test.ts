import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, ServiceRecord, WalkCheckpoint } from '../../src/core/types.js';
import { openWarehouse, type PageBatch, type Warehouse } from '../../src/warehouse/index.js';
import { expectHistoryInvariant } from '../support/history-invariant.js';
import { VERSION_COLUMNS } from '../../src/warehouse/history-names.js';
import { parseInstantMicros } from '../../src/core/time.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;
const C_ID = (n: number) => `C${String(n).padStart(17, '0')}`;

function def(
  api_name: string,
  display_name: string,
  property_type = 'text',
  options: PropertyDefinition['options'] = [],
): PropertyDefinition {
  return { api_name, display_name, property_type, is_core: false, is_required_on_create: false, options };
}
const DEAL_DEFS: PropertyDefinition[] = [
  def('name', '商談名'),
  def('amount', '金額', 'number'),
  def('stage', 'フェーズ', 'select', [
    { value: 'stg_lead', label: 'リード' },
    { value: 'stg_won', label: '受注' },
  ]),
  def('account_id', '取引先'),
];

function deal(n: number, updated_at: string, properties: ServiceRecord['properties']): ServiceRecord {
  return { id: ID(n), properties, created_at: '2025-12-01T00:00:00Z', updated_at };
}
const checkpoint: WalkCheckpoint = { cursor: 'c', updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' };
const batch = (records: ServiceRecord[], extra: Partial<PageBatch> = {}): PageBatch => ({ records, checkpoint, ...extra });
/** SQL turning a live table back into an earlier release's, which had no version columns. */
const withoutVersionColumns = (table: string) => VERSION_COLUMNS.map((c) => `ALTER TABLE ${table} DROP COLUMN ${c.name};`).join('\n');

let dir: string;
let warehouse: Warehouse;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-history-'));
  warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
  await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
});

afterEach(async () => {
  await warehouse.close();
  rmSync(dir, { recursive: true, force: true });
});

const versionsOf = async (n: number) =>
  (
    await warehouse.query(
      `SELECT properties->>'name' AS name, properties->>'account_id' AS account, source, valid_from_basis AS basis, valid_from,
              deleted, is_current, run_id FROM deals_history WHERE id = '${ID(n)}' ORDER BY change_seq`,
    )
  ).map((v) => [v.name, v.account, v.source, v.basis, v.deleted, v.is_current, v.run_id]);

/** Close the warehouse, run `sql` on its file (turning it into an earlier release's), and open it again. */
async function reopenedAfter(sql: string): Promise<void> {
  await warehouse.close();
  const instance = await DuckDBInstance.create(join(dir, 'mirror.duckdb'));
  const connection = await instance.connect();
  await connection.run(sql);
  connection.closeSync();
  instance.closeSync();
  warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
  await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
}

/** Every change_seq of the given resources' histories, ascending. */
const changeSeqs = async (tables: readonly string[]) =>
  (
    await warehouse.query(
      `SELECT change_seq FROM (${tables.map((t) => `SELECT change_seq FROM ${t}_history`).join(' UNION ALL ')}) ORDER BY change_seq`,
    )
  ).map((r) => BigInt(r.change_seq as bigint));

/** The steps every test below starts from: one of each kind of change. */
async function everyKindOfChange(): Promise<void> {
  await warehouse.commitBatch(
    'deals',
    batch(
      [
        deal(1, '2026-01-01T00:00:00Z', { name: 'one', stage: 'stg_lead', amount: 10 }),
        deal(2, '2026-01-01T00:00:00Z', { name: 'two', account_id: 'C1' }),
        deal(3, '2026-01-01T00:00:00Z', { name: 'three' }),
      ],
      { runId: 'run-1' },
    ),
  );
  await warehouse.commitBatch(
    'deals',
    batch([deal(1, '2026-01-02T00:00:00Z', { name: 'one', stage: 'stg_won', amount: 12 })], { runId: 'run-2' }),
  );
  // Seen again unchanged: no version.
  await warehouse.commitBatch('deals', batch([deal(2, '2026-01-01T00:00:00Z', { name: 'two', account_id: 'C1' })], { runId: 'run-2' }));
  // A backfill that sees an older version (a corrected clock): written, so a version, dated when it was observed.
  await warehouse.commitBatch(
    'deals',
    batch([deal(3, '2025-12-31T00:00:00Z', { name: 'three, corrected' })], {
      runId: 'run-b',
      source: 'backfill',
      observedWins: true,
      stateKey: 'deals#backfill',
      observedAt: '2026-01-02T12:00:00Z',
    }),
  );
  // Reconcile finds a link change the service made without a new updated_at.
  await warehouse.commitBatch(
    'deals',
    batch([deal(2, '2026-01-01T00:00:00Z', { name: 'two', account_id: 'C2' })], {
      runId: 'run-r',
      source: 'reconcile',
      observedWins: true,
      stateKey: 'deals#reconcile',
      sweep: { key: 'deals#reconcile', fresh: true },
      observedAt: '2026-01-03T00:00:00Z',
    }),
  );
  await warehouse.completeSweep('deals', {
    key: 'deals#reconcile',
    stateKey: 'deals#reconcile',
    deletedIds: [ID(1)],
    deletedAt: '2026-01-04T00:00:00Z',
    completedAt: '2026-01-03T00:00:00Z',
    runId: 'run-r',
  });
  // Listed again as it was: back from deleted.
  await warehouse.commitBatch(
    'deals',
    batch([deal(1, '2026-01-02T00:00:00Z', { name: 'one', stage: 'stg_won', amount: 12 })], { runId: 'run-3' }),
  );
}

describe('SCD2 history', () => {
  it('appends a version per change of the live row, with its source and run; the current version equals the live row at every step', async () => {
    await everyKindOfChange();
    await expectHistoryInvariant(warehouse, ['deals']);
    expect(await versionsOf(1)).toEqual([
      ['one', null, 'incremental', 'updated_at', false, false, 'run-1'],
      ['one', null, 'incremental', 'updated_at', false, false, 'run-2'],
      ['one', null, 'deleted', 'observed', true, false, 'run-r'],
      ['one', null, 'restored', 'observed', false, true, 'run-3'],
    ]);
    expect(await versionsOf(2)).toEqual([
      ['two', 'C1', 'incremental', 'updated_at', false, false, 'run-1'],
      ['two', 'C2', 'reconcile', 'observed', false, true, 'run-r'],
    ]);
    expect(await versionsOf(3)).toEqual([
      ['three', null, 'incremental', 'updated_at', false, false, 'run-1'],
      ['three, corrected', null, 'backfill', 'observed', false, true, 'run-b'],
    ]);
    // A change updated_at does not date is dated by its observation, and says so.
    const silent = await warehouse.query(`SELECT valid_from FROM deals_history WHERE id = '${ID(2)}' AND source = 'reconcile'`);
    expect(silent).toEqual([{ valid_from: '2026-01-03T00:00:00.000000Z' }]);
    const deletion = await warehouse.query(`SELECT valid_from FROM deals_history WHERE id = '${ID(1)}' AND deleted`);
    expect(deletion).toEqual([{ valid_from: '2026-01-04T00:00:00.000000Z' }]);
  });

  it('a deleted row equals its current, deleted version; a late page never becomes a version', async () => {
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', { name: 'new' })]));
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z', { name: 'late' })]));
    await warehouse.completeSweep('deals', {
      key: 'k',
      stateKey: 'deals#reconcile',
      deletedIds: [ID(1)],
      deletedAt: '2026-01-03T00:00:00Z',
      completedAt: '2026-01-03T00:00:00Z',
    });
    await expectHistoryInvariant(warehouse, ['deals']);
    expect((await versionsOf(1)).map((v) => [v[0], v[2], v[4]])).toEqual([
      ['new', 'incremental', false],
      ['new', 'deleted', true],
    ]);
  });

  it('shows versions typed and labelled in deals_history_view', async () => {
    await everyKindOfChange();
    const rows = await warehouse.query(
      `SELECT "商談名", "金額", "フェーズ", source, is_current FROM deals_history_view WHERE id = '${ID(1)}' ORDER BY change_seq`,
    );
    expect(rows).toEqual([
      { 商談名: 'one', 金額: 10, フェーズ: 'リード', source: 'incremental', is_current: false },
      { 商談名: 'one', 金額: 12, フェーズ: '受注', source: 'incremental', is_current: false },
      { 商談名: 'one', 金額: 12, フェーズ: '受注', source: 'deleted', is_current: false },
      { 商談名: 'one', 金額: 12, フェーズ: '受注', source: 'restored', is_current: true },
    ]);
    const types = await warehouse.query(
      `SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'deals_history_view' AND column_name IN ('金額', 'valid_from')`,
    );
    expect(Object.fromEntries(types.map((t) => [t.column_name, t.data_type]))).toEqual({
      金額: 'DOUBLE',
      valid_from: 'TIMESTAMP WITH TIME ZONE',
    });
  });

  it('a history view dropped by hand is made again at the next listing of definitions, every version kept', async () => {
    await everyKindOfChange();
    const before = await versionsOf(1);
    await reopenedAfter('DROP VIEW deals_history');
    expect(await versionsOf(1)).toEqual(before);
    await expectHistoryInvariant(warehouse, ['deals']);
  });
});

describe('the change feed', () => {
  it('gives every change once in commit order, with the changed properties old and new, and the cursor for next time', async () => {
    await everyKindOfChange();
    const all = await warehouse.readChanges({ resources: [], since: { cursor: 0n } });
    // One commit's versions come in no particular order among themselves; commits come in order.
    const inserts = all.changes.slice(0, 3).map((c) => [c.id, c.kind, c.source]);
    expect(inserts.sort()).toEqual([
      [ID(1), 'insert', 'incremental'],
      [ID(2), 'insert', 'incremental'],
      [ID(3), 'insert', 'incremental'],
    ]);
    expect(all.changes.slice(3).map((c) => [c.id, c.kind, c.source])).toEqual([
      [ID(1), 'update', 'incremental'],
      [ID(3), 'update', 'backfill'],
      [ID(2), 'update', 'reconcile'],
      [ID(1), 'delete', 'deleted'],
      [ID(1), 'restore', 'restored'],
    ]);
    const seqs = all.changes.map((c) => BigInt(c.change_seq));
    expect(seqs).toEqual([...seqs].sort((a, b) => (a < b ? -1 : 1)));
    expect(all.cursor).toBe(all.changes.at(-1)!.change_seq);
    const link = all.changes.find((c) => c.source === 'reconcile')!;
    expect(link.changed_properties).toEqual(['account_id']);
    expect(link.old_properties).toEqual({ name: 'two', account_id: 'C1' });
    expect(link.new_properties).toEqual({ name: 'two', account_id: 'C2' });
    expect(all.changes[3]!.changed_properties).toEqual(['amount', 'stage']);
    expect(all.changes.find((c) => c.kind === 'delete')!.changed_properties).toEqual([]);

    // From the cursor: only what came after, and the cursor stays put when nothing did.
    const after = all.changes[4]!.change_seq;
    const rest = await warehouse.readChanges({ resources: ['deals'], since: { cursor: BigInt(after) } });
    expect(rest.changes.map((c) => c.change_seq)).toEqual(all.changes.slice(5).map((c) => c.change_seq));
    expect(await warehouse.readChanges({ resources: [], since: { cursor: BigInt(all.cursor) } })).toEqual({
      changes: [],
      cursor: all.cursor,
      available: true,
    });
    // Another resource's filter still moves the cursor past everything read.
    expect(await warehouse.readChanges({ resources: ['companies'], since: { cursor: 0n } })).toEqual({
      changes: [],
      cursor: all.cursor,
      available: true,
    });
    const byTime = await warehouse.readChanges({ resources: [], since: { time: '2000-01-01T00:00:00.000000Z' } });
    expect(byTime.changes).toHaveLength(all.changes.length);

    // The same feed as Parquet.
    const file = join(dir, 'changes.parquet');
    expect(await warehouse.writeChangesParquet({ resources: [], since: { cursor: BigInt(after) } }, file)).toEqual({
      rows: 3,
      cursor: all.cursor,
      available: true,
    });
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    const read = await connection.runAndReadAll(`SELECT kind, changed_properties FROM read_parquet('${file}') ORDER BY change_seq`);
    expect(read.getRowObjectsJson()).toEqual([
      { kind: 'update', changed_properties: ['account_id'] },
      { kind: 'delete', changed_properties: [] },
      { kind: 'restore', changed_properties: [] },
    ]);
    connection.closeSync();
    instance.closeSync();
  });
  it('a poll from any cursor or time, of any resources, gives exactly the rows of the changes view after it', async () => {
    await everyKindOfChange();
    await warehouse.applyPropertyDefinitions('companies', [def('name', '取引先名')]);
    const company = (name: string, updated_at: string): ServiceRecord => ({
      id: C_ID(1),
      properties: { name },
      created_at: '2025-12-01T00:00:00Z',
      updated_at,
    });
    await warehouse.commitBatch('companies', batch([company('first', '2026-01-03T00:00:00Z')]));
    await warehouse.commitBatch('deals', batch([deal(2, '2026-01-04T00:00:00Z', { name: 'two, again', account_id: 'C2' })]));
    await warehouse.commitBatch('companies', batch([company('second', '2026-01-05T00:00:00Z')]));

    // The view gives JSON as text and the cursor as a number; the feed parses the one and keeps the other as text.
    const normal = (given: object): Record<string, unknown> & { change_seq: string } => {
      const row = given as Record<string, unknown>;
      const parsed = (value: unknown) => (typeof value === 'string' ? (JSON.parse(value) as unknown) : value);
      return {
        ...row,
        change_seq: String(row.change_seq),
        old_properties: parsed(row.old_properties),
        new_properties: parsed(row.new_properties),
      };
    };
    const view = (await warehouse.query(`SELECT * FROM changes ORDER BY change_seq`)).map(normal);
    expect(view.length).toBeGreaterThan(8);
    const instant = (value: unknown) => parseInstantMicros(String(value))!;
    const times = [...new Set(view.map((row) => String(row.committed_at)))];
    // One handle that keeps the file open through the polls below, which would each open and close it.
    await warehouse.close();
    warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500, lingerMs: 60_000 });
    for (const resources of [[], ['deals'], ['companies']] as const) {
      const mine = view.filter((row) => resources.length === 0 || row.resource === resources[0]);
      for (const cursor of ['0', ...view.map((row) => row.change_seq)]) {
        const polled = await warehouse.readChanges({ resources, since: { cursor: BigInt(cursor) } });
        expect(polled.changes.map(normal), `after ${cursor} ${resources.join()}`).toEqual(
          mine.filter((row) => BigInt(row.change_seq) > BigInt(cursor)),
        );
      }
      for (const time of times) {
        const polled = await warehouse.readChanges({ resources, since: { time } });
        expect(polled.changes.map(normal), `from ${time} ${resources.join()}`).toEqual(
          mine.filter((row) => instant(row.committed_at) >= instant(time)),
        );
      }
    }
  });

  it('never calls nextval for a version: the sequence stays where it seeded the counter', async () => {
    // A per-row nextval in a large commit let DuckDB overwrite stored properties at low memory limits.
    const seeded = await warehouse.query(`SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'history_change_seq'`);
    await everyKindOfChange();
    expect(await changeSeqs(['deals'])).not.toHaveLength(0);
    expect(await warehouse.query(`SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'history_change_seq'`)).toEqual(seeded);
  });

  it("numbers each commit's versions with change_seqs of their own, above every one committed before, across resources", async () => {
    await warehouse.applyPropertyDefinitions('companies', [def('name', '取引先名')]);
    const company = (n: number, updated_at: string, name: string): ServiceRecord => ({
      id: C_ID(n),
      properties: { name },
      created_at: '2025-12-01T00:00:00Z',
      updated_at,
    });
    const commits: (() => Promise<unknown>)[] = [
      // First loads (written straight from the page), then a batch of stored and new ids (staged).
      () => warehouse.commitBatch('deals', batch([1, 2, 3, 4].map((n) => deal(n, '2026-01-01T00:00:00Z', { name: `d${n}` })))),
      () => warehouse.commitBatch('companies', batch([company(1, '2026-01-01T00:00:00Z', 'c1'), company(2, '2026-01-01T00:00:00Z', 'c2')])),
      () =>
        warehouse.commitBatch(
          'deals',
          batch([
            deal(1, '2026-01-02T00:00:00Z', { name: 'd1 v2' }),
            deal(2, '2026-01-01T00:00:00Z', { name: 'd2' }),
            deal(5, '2026-01-02T00:00:00Z', { name: 'd5' }),
          ]),
        ),
      () =>
        warehouse.commitBatch(
          'deals',
          batch([deal(5, '2026-01-02T00:00:00Z', { name: 'd5, linked' })], {
            observedWins: true,
            sweep: { key: 'deals#reconcile', fresh: true },
            stateKey: 'deals#reconcile',
          }),
        ),
      () =>
        warehouse.completeSweep('deals', {
          key: 'deals#reconcile',
          stateKey: 'deals#reconcile',
          // An id listed twice still takes one version, numbered apart from the others.
          deletedIds: [ID(3), ID(4), ID(2), ID(4)],
          deletedAt: '2026-01-04T00:00:00Z',
          completedAt: '2026-01-03T00:00:00Z',
          runId: 'run-r',
        }),
      () =>
        warehouse.commitBatch('companies', batch([company(2, '2026-01-05T00:00:00Z', 'c2 v2'), company(3, '2026-01-05T00:00:00Z', 'c3')])),
      () => warehouse.commitBatch('deals', batch([deal(3, '2026-01-06T00:00:00Z', { name: 'd3 back' })])),
    ];
    let before: bigint[] = [];
    for (const [i, commit] of commits.entries()) {
      await commit();
      const after = await changeSeqs(['deals', 'companies']);
      expect(new Set(after).size, `commit ${i}: every version its own change_seq`).toBe(after.length);
      const last = before.at(-1) ?? 0n;
      const added = after.filter((seq) => !before.includes(seq));
      expect(added.length, `commit ${i}: its versions`).toBeGreaterThan(0);
      expect(
        added.every((seq) => seq > last),
        `commit ${i}: above every earlier version`,
      ).toBe(true);
      expect(
        before.every((seq) => after.includes(seq)),
        `commit ${i}: earlier versions keep theirs`,
      ).toBe(true);
      before = after;
    }
    await expectHistoryInvariant(warehouse, ['deals', 'companies']);
  });
});

describe('a warehouse of the previous release', () => {
  it('migrates its history to SCD2 without losing a version, and the invariant holds', async () => {
    await warehouse.applyPropertyDefinitions('companies', [def('name', '取引先名')]);
    await warehouse.commitBatch(
      'companies',
      batch([{ id: C_ID(1), properties: { name: 'Acme' }, created_at: '2025-12-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z' }]),
    );
    await warehouse.commitBatch(
      'deals',
      batch([
        deal(1, '2026-01-02T00:00:00Z', { name: 'one v2' }),
        deal(2, '2026-01-01T00:00:00Z', { name: 'two' }),
        deal(3, '2026-01-01T00:00:00Z', { name: 'three' }),
      ]),
    );
    // What the previous release left: one row per (id, updated_at) observed, history_ahead, rows deleted and changed.
    await reopenedAfter(`
      DROP VIEW IF EXISTS deals_history_view; DROP VIEW IF EXISTS companies_history_view; DROP VIEW IF EXISTS changes;
      DROP VIEW deals_history; DROP VIEW companies_history; DROP TABLE deals_history_store; DROP TABLE companies_history_store;
      ${withoutVersionColumns('deals')} ${withoutVersionColumns('companies')}
      CREATE TABLE deals_history (id VARCHAR NOT NULL, updated_at TIMESTAMPTZ NOT NULL, properties JSON, observed_at TIMESTAMPTZ);
      CREATE TABLE companies_history (id VARCHAR NOT NULL, updated_at TIMESTAMPTZ NOT NULL, properties JSON, observed_at TIMESTAMPTZ);
      INSERT INTO deals_history VALUES
        ('${ID(1)}', '2026-01-01T00:00:00Z', '{"name":"one v1"}', '2026-01-01T01:00:00Z'),
        ('${ID(1)}', '2026-01-02T00:00:00Z', '{"name":"one v2"}', '2026-01-02T01:00:00Z'),
        ('${ID(1)}', '2026-01-03T00:00:00Z', '{"name":"one v3, never stored"}', '2026-01-03T01:00:00Z'),
        ('${ID(2)}', '2025-12-31T00:00:00Z', '{"name":"two v0, a late page"}', '2026-01-02T01:00:00Z'),
        ('${ID(2)}', '2026-01-01T00:00:00Z', '{"name":"two"}', '2026-01-01T01:00:00Z'),
        ('${ID(3)}', '2026-01-01T00:00:00Z', '{"name":"three"}', '2026-01-01T01:00:00Z');
      INSERT INTO companies_history VALUES ('${C_ID(1)}', '2026-01-01T00:00:00Z', '{"name":"Acme"}', '2026-01-01T01:00:00Z');
      CREATE TABLE history_ahead (history_table VARCHAR NOT NULL, id VARCHAR NOT NULL, newest_at TIMESTAMPTZ NOT NULL);
      INSERT INTO history_ahead VALUES ('deals_history', '${ID(1)}', '2026-01-03T00:00:00Z');
      UPDATE deals SET _properties = '{"name":"two, linked"}' WHERE id = '${ID(2)}';
      UPDATE deals SET _deleted_at = '2026-01-04T00:00:00Z' WHERE id = '${ID(3)}';
    `);
    await expectHistoryInvariant(warehouse, ['deals', 'companies']);
    const versions = await warehouse.query(
      `SELECT id, properties->>'name' AS name, source, deleted, is_current, valid_to IS NULL AS open FROM deals_history ORDER BY id, change_seq`,
    );
    expect(versions.map((v) => [v.id, v.name, v.source, v.deleted, v.is_current, v.open])).toEqual([
      [ID(1), 'one v1', 'migrated', false, false, false],
      [ID(1), 'one v2', 'migrated', false, false, false],
      [ID(1), 'one v3, never stored', 'migrated', false, false, false],
      // The live row holds v2 (an observed-wins write): a version says so, and is current.
      [ID(1), 'one v2', 'migrated', false, true, true],
      [ID(2), 'two v0, a late page', 'migrated', false, false, false],
      [ID(2), 'two', 'migrated', false, false, false],
      [ID(2), 'two, linked', 'migrated', false, true, true],
      [ID(3), 'three', 'migrated', false, false, false],
      [ID(3), 'three', 'deleted', true, true, true],
    ]);
    expect(
      await warehouse.query(
        `SELECT count(*)::INTEGER AS n FROM duckdb_tables() WHERE table_name IN ('history_ahead', 'deals_history__v1')`,
      ),
    ).toEqual([{ n: 0 }]);
    const migrated = await changeSeqs(['deals', 'companies']);
    expect(new Set(migrated).size).toBe(migrated.length);
    // Writing on from there: the next change closes the migrated current version.
    await warehouse.commitBatch('deals', batch([deal(2, '2026-01-05T00:00:00Z', { name: 'two v2' })]));
    await expectHistoryInvariant(warehouse, ['deals']);
    const next = (await changeSeqs(['deals'])).filter((seq) => !migrated.includes(seq));
    expect(next.length === 1 && next[0]! > migrated.at(-1)!).toBe(true);
    const feed = await warehouse.readChanges({ resources: ['deals'], since: { cursor: 0n } });
    expect(feed.changes.filter((c) => c.id === ID(2)).map((c) => c.kind)).toEqual(['insert', 'update', 'update', 'update']);
    const created = await warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals_history WHERE created_at IS NULL`);
    expect(created).toEqual([{ n: 0 }]);
  });

  it('numbers new versions above every change_seq a warehouse numbered from its sequence', async () => {
    await everyKindOfChange();
    const before = await changeSeqs(['deals']);
    // The release before numbered versions by nextval and had no counter.
    await reopenedAfter(`DROP TABLE history_change_counter; DROP SEQUENCE history_change_seq;
      CREATE SEQUENCE history_change_seq START WITH ${before.at(-1)! + 1n};`);
    await warehouse.commitBatch(
      'deals',
      batch([deal(2, '2026-01-09T00:00:00Z', { name: 'two, later' }), deal(7, '2026-01-09T00:00:00Z', { name: 'seven' })]),
    );
    const added = (await changeSeqs(['deals'])).filter((seq) => !before.includes(seq));
    expect(added).toHaveLength(2);
    expect(added.every((seq) => seq > before.at(-1)!)).toBe(true);
    await expectHistoryInvariant(warehouse, ['deals']);
  });

  it('keeps an SCD2 history table as its store: every version as it was, current ones read from the live row', async () => {
    await everyKindOfChange();
    const before = await warehouse.query(`SELECT * FROM deals_history ORDER BY change_seq`);
    const twoBefore = await versionsOf(2);
    // The release before kept every version's properties in a table named deals_history.
    await reopenedAfter(`
      CREATE TABLE old_history AS SELECT * FROM deals_history;
      DROP VIEW deals_history; DROP TABLE deals_history_store;
      ALTER TABLE old_history RENAME TO deals_history;
      ${withoutVersionColumns('deals')}
    `);
    expect(await warehouse.query(`SELECT * FROM deals_history ORDER BY change_seq`)).toEqual(before);
    await expectHistoryInvariant(warehouse, ['deals']);
    await warehouse.commitBatch('deals', batch([deal(2, '2026-01-09T00:00:00Z', { name: 'two, later' })]));
    await expectHistoryInvariant(warehouse, ['deals']);
    expect((await versionsOf(2)).map(([name]) => name)).toEqual([...twoBefore.map(([name]) => name), 'two, later']);
  });

  it('moves each current version of a store that kept them into its live row, every version as it was', async () => {
    await everyKindOfChange();
    const before = await warehouse.query(`SELECT * FROM deals_history ORDER BY change_seq`);
    const twoBefore = await versionsOf(2);
    // The release before kept current versions in the store too, their properties NULL (read from the live row).
    await reopenedAfter(`
      CREATE TABLE old_store AS SELECT * REPLACE (CASE WHEN is_current THEN NULL ELSE properties END AS properties) FROM deals_history;
      DROP VIEW deals_history; DROP TABLE deals_history_store;
      ALTER TABLE old_store RENAME TO deals_history_store;
      ${withoutVersionColumns('deals')}
    `);
    expect(await warehouse.query(`SELECT * FROM deals_history ORDER BY change_seq`)).toEqual(before);
    await expectHistoryInvariant(warehouse, ['deals']);
    expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals_history_store WHERE is_current`)).toEqual([{ n: 0 }]);
    await warehouse.commitBatch('deals', batch([deal(2, '2026-01-09T00:00:00Z', { name: 'two, later' })]));
    await expectHistoryInvariant(warehouse, ['deals']);
    expect((await versionsOf(2)).map(([name]) => name)).toEqual([...twoBefore.map(([name]) => name), 'two, later']);
  });
});
