import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SalesyncError } from '../../src/core/errors.js';
import type { MeetingLogSummary, PropertyDefinition, ServiceRecord, WalkCheckpoint } from '../../src/core/types.js';
import { openWarehouse, type PageBatch, type PreparedBatch, type Warehouse } from '../../src/warehouse/index.js';
import { expectHistoryInvariant } from '../support/history-invariant.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;

function def(api_name: string, property_type = 'text', display_name = api_name): PropertyDefinition {
  return { api_name, display_name, property_type, is_core: false, is_required_on_create: false, options: [] };
}

const DEAL_DEFS: PropertyDefinition[] = [
  { ...def('name'), is_core: true, is_required_on_create: true },
  def('amount', 'number'),
  def('close_date', 'date'),
  def('signed_at', 'datetime'),
  def('won', 'boolean'),
  { ...def('stage', 'select'), options: [{ value: 'won', label: '受注' }] },
  def('tags', 'multiselect'),
];

function deal(n: number, updated_at: string, properties: ServiceRecord['properties'] = {}): ServiceRecord {
  return { id: ID(n), properties, created_at: '2025-12-31T23:59:59.999999+09:00', updated_at };
}

const checkpoint = (cursor: string | null): WalkCheckpoint => ({
  cursor,
  updatedAfter: null,
  startedAt: '2026-01-05T00:00:00.000001Z',
  mode: 'full',
});

function batch(records: PageBatch['records'], cursor: string | null = 'c1', extra: Partial<PageBatch> = {}): PageBatch {
  return { records, checkpoint: checkpoint(cursor), ...extra };
}

let dir: string;
let warehouse: Warehouse;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-warehouse-'));
  warehouse = openWarehouse({ path: join(dir, 'nested', 'mirror.duckdb'), lockTimeoutMs: 1500 });
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('DuckDB warehouse', () => {
  it('does not touch the file until a method needs it, then creates it (and its directory) with mode 0600', async () => {
    expect(() => statSync(warehouse.path)).toThrow();
    await warehouse.ensureSchema();
    expect(statSync(warehouse.path).mode & 0o777).toBe(0o600);
  });

  it('keeps timestamps at full precision: offsets honoured, microseconds kept', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.commitBatch(
      'deals',
      batch([deal(1, '2026-01-02T03:04:05.123456+09:00', { signed_at: '2026-01-02T03:04:05.000001-05:00' })]),
    );
    const [row] = await warehouse.query(`SELECT epoch_us(updated_at) AS u, epoch_us(created_at) AS c, epoch_us(signed_at) AS s FROM deals`);
    expect(row).toEqual({ u: 1767290645123456, c: 1767193199999999, s: 1767341045000001 });
    const stored = await warehouse.storedUpdatedAt('deals', [ID(1), ID(2)]);
    expect([...stored]).toEqual([[ID(1), '2026-01-01T18:04:05.123456Z']]);
  });

  it('stores one typed column per property, NULL for values of the wrong type, and the raw properties as received', async () => {
    const plan = await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    expect(plan.map((p) => [p.columnName, p.sqlType])).toEqual([
      ['name', 'VARCHAR'],
      ['amount', 'DOUBLE'],
      ['close_date', 'DATE'],
      ['signed_at', 'TIMESTAMPTZ'],
      ['won', 'BOOLEAN'],
      ['stage', 'VARCHAR'],
      ['tags', 'JSON'],
    ]);
    const properties = { name: 'Acme "big" deal; --', amount: 'lots', close_date: '2026-03-31', won: true, stage: 'won', tags: 'a,b' };
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z', properties)]));
    const [row] = await warehouse.query(
      `SELECT name, amount, close_date, signed_at, won, stage, CAST(tags AS VARCHAR) AS tags, CAST(_properties AS VARCHAR) AS p, _deleted_at FROM deals`,
    );
    expect(row).toEqual({
      name: 'Acme "big" deal; --',
      amount: null,
      close_date: '2026-03-31',
      signed_at: null,
      won: true,
      stage: 'won',
      tags: '"a,b"',
      p: JSON.stringify(properties),
      _deleted_at: null,
    });
    const [column] = await warehouse.query(`SELECT data_type FROM duckdb_columns() WHERE table_name = 'deals' AND column_name = 'tags'`);
    expect(column?.data_type).toBe('JSON');
  });

  it('upserts idempotently and keeps one row per id when a batch repeats an id (the latest wins)', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    const records = [
      deal(1, '2026-01-01T00:00:00.000002Z', { name: 'newest' }),
      deal(1, '2026-01-01T00:00:00.000001Z', { name: 'older' }),
      deal(2, '2026-01-01T00:00:00Z', { name: 'two' }),
    ];
    expect(await warehouse.commitBatch('deals', batch(records))).toMatchObject({ written: 2 });
    expect(await warehouse.commitBatch('deals', batch(records))).toMatchObject({ written: 2 });
    expect(await warehouse.query(`SELECT id, name FROM deals ORDER BY id`)).toEqual([
      { id: ID(1), name: 'newest' },
      { id: ID(2), name: 'two' },
    ]);
  });

  it('updates the stored ids of a mixed batch and appends the new ones, one row and one version each', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.commitBatch(
      'deals',
      batch([deal(1, '2026-01-01T00:00:00Z', { name: 'one' }), deal(2, '2026-01-01T00:00:00Z', { name: 'two' })]),
    );
    const mixed = [deal(2, '2026-01-02T00:00:00Z', { name: 'two v2', amount: 5 }), deal(3, '2026-01-02T00:00:00Z', { name: 'three' })];
    expect(await warehouse.commitBatch('deals', batch(mixed))).toMatchObject({ written: 2, changed: 2 });
    expect(await warehouse.commitBatch('deals', batch(mixed))).toMatchObject({ written: 2, changed: 0 });
    expect(await warehouse.query(`SELECT id, name, amount FROM deals ORDER BY id`)).toEqual([
      { id: ID(1), name: 'one', amount: null },
      { id: ID(2), name: 'two v2', amount: 5 },
      { id: ID(3), name: 'three', amount: null },
    ]);
    expect(await warehouse.query(`SELECT id, count(*)::INTEGER AS versions FROM deals_history GROUP BY id ORDER BY id`)).toEqual([
      { id: ID(1), versions: 1 },
      { id: ID(2), versions: 2 },
      { id: ID(3), versions: 1 },
    ]);
  });

  it('keeps a stored row when a late page brings an older version of it', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00.000002Z', { name: 'newer' })]));
    const result = await warehouse.commitBatch(
      'deals',
      batch([deal(1, '2026-01-02T09:00:00.000001+09:00', { name: 'older' }), deal(2, '2026-01-01T00:00:00Z', { name: 'new id' })]),
    );
    expect(result).toMatchObject({ written: 1 });
    expect(await warehouse.query(`SELECT id, name FROM deals ORDER BY id`)).toEqual([
      { id: ID(1), name: 'newer' },
      { id: ID(2), name: 'new id' },
    ]);
  });

  it('commits rows and checkpoint together: a record that breaks the insert changes neither', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z', { name: 'kept' })], 'cursor-1'));
    const broken = { ...deal(3, '2026-01-03T00:00:00Z'), id: null } as unknown as ServiceRecord;
    const failing = warehouse.commitBatch(
      'deals',
      batch([deal(1, '2026-01-03T00:00:00Z', { name: 'lost' }), deal(2, '2026-01-03T00:00:00Z'), broken], 'cursor-2'),
    );
    await expect(failing).rejects.toMatchObject({ code: 'warehouse_error' });
    expect(await warehouse.query(`SELECT id, name FROM deals`)).toEqual([{ id: ID(1), name: 'kept' }]);
    expect((await warehouse.readState('deals')).walk?.cursor).toBe('cursor-1');
  });

  it('loads a record far larger than the others in its batch, multi-byte text included', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    const huge = '売上'.repeat(60_000) + 'x'.repeat(200_000);
    await warehouse.commitBatch(
      'deals',
      batch([deal(1, '2026-01-01T00:00:00Z', { name: 'small' }), deal(2, '2026-01-01T00:00:00Z', { name: huge })]),
    );
    expect(await warehouse.query(`SELECT id, length(name) AS n FROM deals ORDER BY id`)).toEqual([
      { id: ID(1), n: 5 },
      { id: ID(2), n: huge.length },
    ]);
  });

  it("loads a record over read_json's default 16 MiB object limit", async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    const enormous = '売'.repeat(6_000_000); // 18 MB of UTF-8
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z', { name: enormous })]));
    expect(await warehouse.query(`SELECT length(name) AS n FROM deals`)).toEqual([{ n: enormous.length }]);
  });

  it('fails the commit of a batch prepared with an invalid record before opening the file, and writes none of it', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z', { name: 'kept' })], 'cursor-1'));
    const broken = { ...deal(3, '2026-01-03T00:00:00Z'), id: null } as unknown as ServiceRecord;
    const prepared = warehouse.prepareBatch('deals', batch([deal(2, '2026-01-02T00:00:00Z'), broken], 'cursor-2'));
    await expect(warehouse.commitBatch('deals', prepared)).rejects.toMatchObject({ code: 'warehouse_error' });
    expect(await warehouse.query(`SELECT id, name FROM deals`)).toEqual([{ id: ID(1), name: 'kept' }]);
    expect((await warehouse.readState('deals')).walk?.cursor).toBe('cursor-1');
  });
  it('encodes batches prepared back to back one at a time, in order: the batch the writer takes next is ready first', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    // A first commit gives the plan later batches are encoded with as soon as they are prepared.
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z')], 'cursor-1'));
    const many = Array.from({ length: 2000 }, (_, i) => deal(i + 2, '2026-01-02T00:00:00Z', { name: `deal ${i}` }));
    const first = warehouse.prepareBatch('deals', batch(many, 'cursor-2'));
    const second = warehouse.prepareBatch('deals', batch([deal(9999, '2026-01-03T00:00:00Z')], 'cursor-3'));
    // The encoding under way (internal): side by side, the one-record batch would be done long before the other.
    const encoded = (prepared: PreparedBatch) => (prepared as unknown as { early: Promise<unknown> }).early;
    const finished: string[] = [];
    await Promise.all([encoded(first).then(() => finished.push('first')), encoded(second).then(() => finished.push('second'))]);
    expect(finished).toEqual(['first', 'second']);
    await warehouse.commitBatch('deals', first);
    await warehouse.commitBatch('deals', second);
    expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals`)).toEqual([{ n: 2002 }]);
  });
  describe('a batch waiting for the writer', () => {
    // The stage file under way (internal): the batch's rows, written while earlier batches hold the writer.
    const stageFile = (prepared: PreparedBatch) => (prepared as unknown as { early: Promise<{ path: string }> }).early;
    const gathered = async (records: ServiceRecord[]) => {
      const buffer = warehouse.recordBuffer('deals', { observedWins: false });
      await buffer.add(records);
      return buffer;
    };

    it('is held in a stage file, not in the process, and the file goes once its commit is over', async () => {
      await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
      await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z')], 'cursor-1'));
      const buffer = await gathered([deal(2, '2026-01-02T00:00:00Z', { name: 'staged' })]);
      const prepared = warehouse.prepareBatch('deals', batch(buffer, 'cursor-2'));
      const { path } = await stageFile(prepared);
      expect(existsSync(path)).toBe(true);
      // The rows' bytes were let go once written: the batch holds none while it waits.
      expect(() => (buffer as unknown as { rows: { bytes(): unknown } }).rows.bytes()).toThrow(/released/);
      await warehouse.commitBatch('deals', prepared);
      expect(existsSync(path)).toBe(false);
      expect(await warehouse.query(`SELECT id, name FROM deals ORDER BY id`)).toEqual([
        { id: ID(1), name: null },
        { id: ID(2), name: 'staged' },
      ]);
    });

    it('is re-encoded from its stage file when a property gained a column before its commit', async () => {
      await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
      await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z')], 'cursor-1'));
      const prepared = warehouse.prepareBatch(
        'deals',
        batch(await gathered([deal(2, '2026-01-02T00:00:00Z', { name: 'n', region: 'emea' })]), 'cursor-2'),
      );
      const { path } = await stageFile(prepared);
      await warehouse.applyPropertyDefinitions('deals', [...DEAL_DEFS, def('region')]);
      await warehouse.commitBatch('deals', prepared);
      expect(existsSync(path)).toBe(false);
      expect(await warehouse.query(`SELECT id, name, region FROM deals WHERE id = '${ID(2)}'`)).toEqual([
        { id: ID(2), name: 'n', region: 'emea' },
      ]);
    });

    it('leaves no stage file when its commit fails, nor when it is never committed and the warehouse closes', async () => {
      await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
      await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z')], 'cursor-1'));
      const failing = warehouse.prepareBatch('deals', batch([deal(2, '2026-01-02T00:00:00Z')], 'cursor-2'));
      const never = warehouse.prepareBatch('deals', batch([deal(3, '2026-01-03T00:00:00Z')], 'cursor-3'));
      const paths = [(await stageFile(failing)).path, (await stageFile(never)).path];
      expect(paths.map((path) => existsSync(path))).toEqual([true, true]);
      // The file no longer NDJSON: DuckDB's read of it fails the commit, after the file was written.
      writeFileSync(paths[0]!, '{"c0": \n');
      await expect(warehouse.commitBatch('deals', failing)).rejects.toMatchObject({ code: 'warehouse_error' });
      expect(existsSync(paths[0]!)).toBe(false);
      await warehouse.close();
      expect(existsSync(paths[1]!)).toBe(false);
    });
  });
  it('stores the checkpoint, and on completion moves the watermark and forgets the walk', async () => {
    await warehouse.commitBatch('deals', batch([], 'cursor-1'));
    expect(await warehouse.readState('deals')).toEqual({
      resource: 'deals',
      watermark: null,
      lastCompletedAt: null,
      confirmFrom: null,
      walk: {
        ...checkpoint('cursor-1'),
        cursorKey: null,
        pass: 1,
        passStartedAt: checkpoint('cursor-1').startedAt,
        dirty: false,
        maxUpdatedAt: null,
        localClock: false,
        received: 0,
      },
    });
    await warehouse.commitBatch('deals', batch([], null, { completeWatermark: '2026-01-04T23:59:00.123456+09:00' }));
    const done = await warehouse.readState('deals');
    expect(done).toMatchObject({ watermark: '2026-01-04T23:59:00.123456+09:00', walk: null });
    expect(done.lastCompletedAt).not.toBeNull();
    await warehouse.commitBatch('deals', batch([], 'cursor-9'));
    await warehouse.clearWalk('deals');
    expect(await warehouse.readState('deals')).toMatchObject({ watermark: '2026-01-04T23:59:00.123456+09:00', walk: null });
  });

  it('adds a column for a new property and fills it from rows already stored', async () => {
    await warehouse.applyPropertyDefinitions('deals', [def('name')]);
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z', { name: 'a', cf000001: 7 })]));
    const plan = await warehouse.applyPropertyDefinitions('deals', [
      def('name'),
      def('cf000001', 'number', 'Score "x"; DROP TABLE deals; --'),
    ]);
    expect(plan.at(-1)).toMatchObject({ columnName: 'cf000001', sqlType: 'DOUBLE' });
    expect(await warehouse.query(`SELECT name, cf000001 FROM deals`)).toEqual([{ name: 'a', cf000001: 7 }]);
    const [stored] = await warehouse.query(`SELECT display_name FROM property_definitions WHERE api_name = 'cf000001'`);
    expect(stored?.display_name).toBe('Score "x"; DROP TABLE deals; --');
  });

  it('gives hostile and case-colliding api_names their own quoted columns', async () => {
    const hostile = 'x"; DROP TABLE deals; --';
    const plan = await warehouse.applyPropertyDefinitions('deals', [
      def(hostile),
      def('Region01'),
      def('region01'),
      def('id'),
      def('地域'),
    ]);
    expect(plan.map((p) => p.columnName)).toEqual([hostile, 'Region01', 'region01__2', 'id__2', '地域']);
    await warehouse.commitBatch(
      'deals',
      batch([deal(1, '2026-01-01T00:00:00Z', { [hostile]: 'h', Region01: 'R', region01: 'r', id: 'i', 地域: '東' })]),
    );
    const [row] = await warehouse.query(
      `SELECT "x""; DROP TABLE deals; --" AS h, "Region01" AS a, "region01__2" AS b, id__2 AS c, "地域" AS d FROM deals`,
    );
    expect(row).toEqual({ h: 'h', a: 'R', b: 'r', c: 'i', d: '東' });
    // A later listing in another order renames nothing.
    const again = await warehouse.applyPropertyDefinitions('deals', [def('region01'), def('Region01')]);
    expect(again.map((p) => p.columnName)).toEqual(['region01__2', 'Region01']);
  });

  it('gives an api_name holding a NUL character a column (U+FFFD in its place), where DuckDB would end the identifier', async () => {
    const plan = await warehouse.applyPropertyDefinitions('deals', [def('ab\u0000cd'), def('ab\uFFFDcd')]);
    expect(plan.map((p) => p.columnName)).toEqual(['ab\uFFFDcd', 'ab\uFFFDcd__2']);
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z', { 'ab\u0000cd': 'nul', 'ab\uFFFDcd': 'replacement' })]));
    expect(await warehouse.query(`SELECT "ab\uFFFDcd" AS a, "ab\uFFFDcd__2" AS b FROM deals`)).toEqual([{ a: 'nul', b: 'replacement' }]);
  });

  it('writes, updates and skips rows whose properties are named like the upsert stage’s own columns', async () => {
    const names = [
      '_stored',
      '_stored_updated_at',
      '_older',
      '_same',
      '_changed',
      '_legacy',
      '_was_deleted',
      '_stored_rowid',
      'c0',
      'c2',
      'k0',
    ];
    await warehouse.applyPropertyDefinitions(
      'deals',
      names.map((n) => def(n)),
    );
    const version = (day: string, n = 1) =>
      deal(n, `2026-01-0${day}T00:00:00Z`, Object.fromEntries(names.map((name) => [name, `${name}@${day}`])));
    expect(await warehouse.commitBatch('deals', batch([version('2')]))).toMatchObject({ written: 1, changed: 1 });
    expect(await warehouse.commitBatch('deals', batch([version('3'), version('3', 2)]))).toMatchObject({ written: 2, changed: 2 });
    // A late page: older than the stored row, so not written, and no version either (history is the mirror's).
    expect(await warehouse.commitBatch('deals', batch([version('1')]))).toMatchObject({ written: 0 });
    const rows = await warehouse.query(`SELECT id, ${names.map((n) => `"${n}"`).join(', ')} FROM deals ORDER BY id`);
    expect(rows).toEqual([
      { id: ID(1), ...Object.fromEntries(names.map((name) => [name, `${name}@3`])) },
      { id: ID(2), ...Object.fromEntries(names.map((name) => [name, `${name}@3`])) },
    ]);
    const history = await warehouse.query(
      `SELECT id, strftime(updated_at AT TIME ZONE 'UTC', '%d') AS day FROM deals_history ORDER BY id, change_seq`,
    );
    expect(history).toEqual([
      { id: ID(1), day: '02' },
      { id: ID(1), day: '03' },
      { id: ID(2), day: '03' },
    ]);
  });

  it("replaces only its own stored row when a property is named rowid (any case), which would hide DuckDB's rowid", async () => {
    const plan = await warehouse.applyPropertyDefinitions('deals', [def('name'), def('RowID')]);
    expect(plan.map((p) => p.columnName)).toEqual(['name', 'RowID__2']);
    await warehouse.commitBatch(
      'deals',
      batch([
        deal(1, '2026-01-01T00:00:00Z', { name: 'a1', RowID: 'same' }),
        deal(2, '2026-01-01T00:00:00Z', { name: 'b1', RowID: 'same' }),
      ]),
    );
    // Deal 1 changes: deal 2, which holds the same RowID value, stays.
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', { name: 'a2', RowID: 'same' })]));
    expect(await warehouse.query(`SELECT id, name FROM deals ORDER BY id, name`)).toEqual([
      { id: ID(1), name: 'a2' },
      { id: ID(2), name: 'b1' },
    ]);
    // A row whose RowID is NULL is replaced too, not duplicated.
    await warehouse.commitBatch('deals', batch([deal(2, '2026-01-02T00:00:00Z', { name: 'b2' })]));
    await warehouse.commitBatch('deals', batch([deal(2, '2026-01-03T00:00:00Z', { name: 'b3' })]));
    expect(await warehouse.query(`SELECT id, name, "RowID__2" AS r FROM deals ORDER BY id, name`)).toEqual([
      { id: ID(1), name: 'a2', r: 'same' },
      { id: ID(2), name: 'b3', r: null },
    ]);
  });

  it('replaces only its own stored row in a warehouse made before rowid was reserved, whose property column is named rowid, and closes its version with what it held', async () => {
    await warehouse.applyPropertyDefinitions('deals', [def('name')]);
    await warehouse.close();
    // As an earlier version assigned it: the property's column is `rowid` itself.
    const instance = await DuckDBInstance.create(warehouse.path);
    const connection = await instance.connect();
    await connection.run(`ALTER TABLE deals ADD COLUMN rowid VARCHAR`);
    await connection.run(
      `INSERT INTO property_definitions SELECT * REPLACE ('rowid' AS api_name, 'rowid' AS column_name) FROM property_definitions WHERE api_name = 'name'`,
    );
    connection.closeSync();
    instance.closeSync();
    warehouse = openWarehouse({ path: warehouse.path, lockTimeoutMs: 1500 });
    await warehouse.commitBatch(
      'deals',
      batch([
        deal(1, '2026-01-01T00:00:00Z', { name: 'a1', rowid: '0' }),
        deal(2, '2026-01-01T00:00:00Z', { name: 'b1', rowid: '0' }),
        deal(3, '2026-01-01T00:00:00Z', { name: 'c1' }),
      ]),
    );
    // Deal 2 holds the same `rowid` value as deal 1, deal 3 none: each replacement touches only its own row.
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', { name: 'a2', rowid: '0' })]));
    await warehouse.commitBatch('deals', batch([deal(3, '2026-01-02T00:00:00Z', { name: 'c2' })]));
    expect(await warehouse.query(`SELECT id, name, rowid AS r FROM deals ORDER BY id, name`)).toEqual([
      { id: ID(1), name: 'a2', r: '0' },
      { id: ID(2), name: 'b1', r: '0' },
      { id: ID(3), name: 'c2', r: null },
    ]);
    await expectHistoryInvariant(warehouse, ['deals']);
    expect(await warehouse.query(`SELECT id, properties->>'name' AS name FROM deals_history ORDER BY id, change_seq`)).toEqual([
      { id: ID(1), name: 'a1' },
      { id: ID(1), name: 'a2' },
      { id: ID(2), name: 'b1' },
      { id: ID(3), name: 'c1' },
      { id: ID(3), name: 'c2' },
    ]);
    await warehouse.close();
  });

  it('writes a batch larger than one DataChunk, including a property named __proto__', async () => {
    await warehouse.applyPropertyDefinitions('deals', [def('name'), def('__proto__', 'number')]);
    const records = Array.from({ length: 5000 }, (_, i) => deal(i, '2026-01-01T00:00:00Z', { name: `deal ${i}`, __proto__: i } as never));
    for (const r of records) Object.defineProperty(r.properties, '__proto__', { value: Number(r.id.slice(1)), enumerable: true });
    expect(await warehouse.commitBatch('deals', batch(records))).toMatchObject({ written: 5000 });
    expect(await warehouse.query(`SELECT count(*) AS n, sum("__proto__") AS s, max(name) AS m FROM deals`)).toEqual([
      { n: 5000, s: (4999 * 5000) / 2, m: 'deal 999' },
    ]);
  });

  it('keeps old values readable when a property changes type, also when their row is re-written, and fills the new column from raw properties', async () => {
    await warehouse.applyPropertyDefinitions('deals', [def('amount', 'number')]);
    await warehouse.commitBatch(
      'deals',
      batch([deal(1, '2026-01-01T00:00:00Z', { amount: 100 }), deal(3, '2026-01-01T00:00:00Z', { amount: 300 })]),
    );
    const plan = await warehouse.applyPropertyDefinitions('deals', [def('amount', 'text')]);
    expect(plan).toEqual([{ apiName: 'amount', columnName: 'amount__varchar', propertyType: 'text', sqlType: 'VARCHAR' }]);
    await warehouse.commitBatch(
      'deals',
      batch([deal(2, '2026-01-01T00:00:00Z', { amount: 'about 5k' }), deal(3, '2026-01-02T00:00:00Z', { amount: 'three' })]),
    );
    expect(await warehouse.query(`SELECT id, amount, amount__varchar FROM deals ORDER BY id`)).toEqual([
      { id: ID(1), amount: 100, amount__varchar: '100' },
      { id: ID(2), amount: null, amount__varchar: 'about 5k' },
      { id: ID(3), amount: 300, amount__varchar: 'three' },
    ]);
    const [definition] = await warehouse.query(`SELECT column_name, property_type FROM property_definitions WHERE api_name = 'amount'`);
    expect(definition).toEqual({ column_name: 'amount__varchar', property_type: 'text' });
  });

  it('keeps the columns and rows of a property no longer listed', async () => {
    await warehouse.applyPropertyDefinitions('deals', [def('name'), def('legacy')]);
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z', { name: 'a', legacy: 'L' })]));
    await warehouse.applyPropertyDefinitions('deals', [def('name')]);
    expect(await warehouse.query(`SELECT legacy FROM deals`)).toEqual([{ legacy: 'L' }]);
    expect(await warehouse.query(`SELECT count(*) AS n FROM property_definitions WHERE resource = 'deals'`)).toEqual([{ n: 2 }]);
  });

  it('replaces the summaries of each listed meeting log, with selections as a list of structs', async () => {
    const summary = (summary_type: string, selections: MeetingLogSummary['selections']): MeetingLogSummary => ({
      summary_type,
      result_type: selections.length ? 'select' : 'text',
      text: selections.length ? null : 'notes',
      selections,
      reason: '',
      status: 'done',
      updated_at: '2026-01-02T03:04:05.123456+09:00',
    });
    const log = (n: number) => ({ ...deal(n, '2026-01-01T00:00:00Z'), id: `M${String(n).padStart(17, '0')}` });
    await warehouse.commitBatch(
      'meeting-logs',
      batch([log(1), log(2)], 'c', {
        summaries: new Map([
          [log(1).id, [summary('old-a', []), summary('old-b', [])]],
          [log(2).id, [summary('kept', [])]],
        ]),
      }),
    );
    await warehouse.commitBatch(
      'meeting-logs',
      batch([log(1)], 'c', {
        summaries: new Map([
          [
            log(1).id,
            [
              summary('new', [
                { value: 'hot', level: 2, order: 1 },
                { value: 'warm', level: 1, order: 2 },
              ]),
            ],
          ],
        ]),
      }),
    );
    expect(
      await warehouse.query(
        `SELECT meeting_log_id AS id, summary_type, selections, selections[1]."order" AS first_order, epoch_us(updated_at) AS u, position
       FROM meeting_log_summaries ORDER BY meeting_log_id, position`,
      ),
    ).toEqual([
      {
        id: log(1).id,
        summary_type: 'new',
        selections: [
          { value: 'hot', level: 2, order: 1 },
          { value: 'warm', level: 1, order: 2 },
        ],
        first_order: 1,
        u: 1767290645123456,
        position: 0,
      },
      { id: log(2).id, summary_type: 'kept', selections: [], first_order: null, u: 1767290645123456, position: 0 },
    ]);
    const [type] = await warehouse.query(
      `SELECT data_type FROM duckdb_columns() WHERE table_name = 'meeting_log_summaries' AND column_name = 'selections'`,
    );
    expect(type?.data_type).toBe('STRUCT("value" VARCHAR, "level" BIGINT, "order" BIGINT)[]');
  });

  it("counts a log's summaries changed by what they hold, repeats included, not by their order", async () => {
    const summary = (summary_type: string): MeetingLogSummary => ({
      summary_type,
      result_type: 'text',
      text: summary_type,
      selections: [],
      reason: '',
      status: 'done',
      updated_at: '2026-01-02T03:04:05Z',
    });
    const log = { ...deal(1, '2026-01-01T00:00:00Z'), id: `M${'1'.padStart(17, '0')}` };
    const write = async (list: MeetingLogSummary[]) =>
      (await warehouse.commitBatch('meeting-logs', batch([log], 'c', { summaries: new Map([[log.id, list]]) }))).summariesChanged;
    expect(await write([summary('a'), summary('b')])).toBe(1);
    expect(await write([summary('b'), summary('a')])).toBe(0);
    expect(await write([summary('a'), summary('a'), summary('b')])).toBe(1);
    expect(await write([summary('a'), summary('b')])).toBe(1);
  });

  it("widens a warehouse's summary selections made with INTEGER to BIGINT on open, keeping its rows", async () => {
    await warehouse.ensureSchema();
    await warehouse.close();
    const instance = await DuckDBInstance.create(warehouse.path);
    const connection = await instance.connect();
    await connection.run(
      `ALTER TABLE meeting_log_summaries ALTER COLUMN selections TYPE STRUCT(value VARCHAR, level INTEGER, "order" INTEGER)[]`,
    );
    await connection.run(
      `INSERT INTO meeting_log_summaries (meeting_log_id, selections, position) VALUES ('M1', [{'value': 'hot', 'level': 2, 'order': 1}], 0)`,
    );
    connection.closeSync();
    instance.closeSync();
    warehouse = openWarehouse({ path: warehouse.path, lockTimeoutMs: 1500 });
    await warehouse.ensureSchema();
    expect(
      await warehouse.query(
        `SELECT data_type FROM duckdb_columns() WHERE table_name = 'meeting_log_summaries' AND column_name = 'selections'`,
      ),
    ).toEqual([{ data_type: 'STRUCT("value" VARCHAR, "level" BIGINT, "order" BIGINT)[]' }]);
    expect(await warehouse.query(`SELECT selections FROM meeting_log_summaries`)).toEqual([
      { selections: [{ value: 'hot', level: 2, order: 1 }] },
    ]);
  });

  it('replaces users, marking those no longer listed and clearing the mark for those back', async () => {
    const user = (n: number) => ({
      id: `U${String(n).padStart(17, '0')}`,
      email: `u${n}@example.com`,
      name: `User ${n}`,
      is_active: n % 2 === 0,
    });
    await warehouse.replaceUsers([user(1), user(2)], '2026-01-01T00:00:00Z');
    expect(await warehouse.replaceUsers([user(2), user(3)], '2026-01-02T00:00:00Z')).toEqual({ written: 2 });
    expect(await warehouse.query(`SELECT id, is_active, _deleted_at FROM users ORDER BY id`)).toEqual([
      { id: user(1).id, is_active: false, _deleted_at: '2026-01-02T00:00:00.000000Z' },
      { id: user(2).id, is_active: true, _deleted_at: null },
      { id: user(3).id, is_active: false, _deleted_at: null },
    ]);
    await warehouse.replaceUsers([user(1)], '2026-01-03T00:00:00Z');
    expect(await warehouse.query(`SELECT id FROM users WHERE _deleted_at IS NULL`)).toEqual([{ id: user(1).id }]);
    expect((await warehouse.tableCounts()).users).toBe(1);
    expect((await warehouse.readState('users')).lastCompletedAt).toBe('2026-01-03T00:00:00Z');
  });

  it('records runs from start to finish and lists the most recent first', async () => {
    const first = await warehouse.startRun({ resource: 'deals', mode: 'full', startedAt: new Date('2026-01-01T00:00:00.123Z') });
    const second = await warehouse.startRun({ resource: 'contacts', mode: 'incremental', startedAt: new Date('2026-01-02T00:00:00Z') });
    await warehouse.finishRun(first, {
      finishedAt: new Date('2026-01-01T00:01:00Z'),
      pages: 3,
      records: 500,
      requests: 4,
      retries: 1,
      rateLimited: 0,
      outcome: 'failed',
      errorCode: 'rate_limited',
      errorMessage: 'レート制限',
    });
    const runs = await warehouse.recentRuns(10);
    expect(runs.map((r) => [r.runId, r.outcome])).toEqual([
      [second, 'running'],
      [first, 'failed'],
    ]);
    expect(runs[1]).toMatchObject({
      resource: 'deals',
      mode: 'full',
      startedAt: new Date('2026-01-01T00:00:00.123Z'),
      finishedAt: new Date('2026-01-01T00:01:00Z'),
      pages: 3,
      records: 500,
      requests: 4,
      retries: 1,
      rateLimited: 0,
      errorCode: 'rate_limited',
      errorMessage: 'レート制限',
    });
    expect(await warehouse.recentRuns(1)).toHaveLength(1);
  });

  it('counts live rows per table, 0 for tables not created yet', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')]));
    expect(await warehouse.tableCounts()).toEqual({
      deals: 2,
      companies: 0,
      contacts: 0,
      meeting_logs: 0,
      contact_activities: 0,
      users: 0,
    });
  });

  it('returns JSON-friendly values from query: safe BIGINTs as numbers, others as strings, timestamps as ISO', async () => {
    await warehouse.ensureSchema();
    const [row] = await warehouse.query(
      `SELECT 42::BIGINT AS small, 9007199254740993::BIGINT AS big, TIMESTAMPTZ '2026-01-02 03:04:05.123456+09' AS ts, DATE '2026-01-02' AS d, 1.5::DECIMAL(4,2) AS dec`,
    );
    expect(row).toEqual({ small: 42, big: '9007199254740993', ts: '2026-01-01T18:04:05.123456Z', d: '2026-01-02', dec: 1.5 });
  });

  it('refuses writes through query, since it opens an existing file read-only', async () => {
    await warehouse.ensureSchema();
    await expect(warehouse.query(`CREATE TABLE sneaky (x INTEGER)`)).rejects.toMatchObject({ code: 'query_refused' });
  });

  it('closes the file between calls, so another instance can open it read-only right after a call returns', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-01T00:00:00Z')]));
    const reader = await DuckDBInstance.create(warehouse.path, { access_mode: 'READ_ONLY' });
    try {
      const connection = await reader.connect();
      const result = await connection.runAndReadAll('SELECT count(*)::INTEGER AS n FROM deals');
      expect(result.getRowObjects()).toEqual([{ n: 1 }]);
      connection.closeSync();
    } finally {
      reader.closeSync();
    }
  });

  it('runs concurrent calls one at a time, so they never conflict over the file', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => warehouse.commitBatch('deals', batch([deal(i, '2026-01-01T00:00:00Z')], `c${i}`))),
    );
    expect(results.every((r) => r.written === 1)).toBe(true);
    expect((await warehouse.tableCounts()).deals).toBe(6);
  });

  describe('when another process holds the file', () => {
    let holder: ChildProcess | undefined;

    afterEach(() => {
      holder?.kill();
      holder = undefined;
    });

    it('waits, logs the holder once, then fails with warehouse_locked naming the file and the PID', async () => {
      await warehouse.ensureSchema();
      holder = spawn(
        process.execPath,
        [
          '-e',
          `require('@duckdb/node-api').DuckDBInstance.create(${JSON.stringify(warehouse.path)}).then(async (i) => { await i.connect(); console.log('held'); setInterval(() => {}, 1000); });`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'], cwd: process.cwd() },
      );
      await new Promise((resolve) => holder!.stdout!.once('data', resolve));
      const warnings: unknown[] = [];
      const logger = { warn: (obj: unknown) => warnings.push(obj) } as unknown as import('pino').Logger;
      const waiting = openWarehouse({ path: warehouse.path, lockTimeoutMs: 1200, logger });
      const started = Date.now();
      const error = await waiting.readState('deals').catch((e: unknown) => e);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1100);
      expect(error).toBeInstanceOf(SalesyncError);
      const e = error as SalesyncError;
      expect(e.code).toBe('warehouse_locked');
      expect(e.disposition).toBe('retriable');
      expect(e.message).toContain(warehouse.path);
      expect(e.message).toContain(`PID ${holder.pid}`);
      expect(warnings).toEqual([expect.objectContaining({ holderPid: holder.pid })]);
    });
  });
});
