import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, ServiceRecord } from '../../src/core/types.js';
import { SalesyncError } from '../../src/core/errors.js';
import { BATCH_SPILL_BYTES, EncodedRecords } from '../../src/warehouse/record-buffer.js';
import { dedupeBatch, encodeRecords, NdjsonRows, reencodeRows, type ChunkSpill } from '../../src/warehouse/rows.js';
import { openWarehouse, type ColumnPlan, type Warehouse } from '../../src/warehouse/index.js';
import { turnsOthersGot } from '../support/event-loop-turns.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;
const SYNCED_AT = '2026-01-01T00:00:00.000000Z';

const deal = (n: number, updated_at: string, properties: ServiceRecord['properties'] = { name: `deal ${n}` }): ServiceRecord => ({
  id: ID(n),
  properties,
  created_at: '2025-12-01T00:00:00Z',
  updated_at,
});

/** Records of every shape a row can take: misfit values, special keys, nested values, an unreadable created_at. */
const varied = (): ServiceRecord[] => [
  deal(1, '2026-01-01T00:00:00Z', { name: 'A', amount: 10, close: '2026-02-01', won: true }),
  deal(2, '2026-01-01T00:00:00.5+09:00', { amount: '12.5', name: 7, close: 'soon', won: 'TRUE' }),
  deal(3, '2026-01-01T00:00:00Z', JSON.parse('{"extra":{"b":[1,{"d":2,"c":3}],"a":null},"name":null}') as ServiceRecord['properties']),
  deal(4, '2026-01-01T00:00:00Z', JSON.parse('{"b":"B","__proto__":"P","10":7,"2":"two","a":"A"}') as ServiceRecord['properties']),
  { ...deal(5, '2026-01-01T00:00:00Z', { name: 'é \u2028 "quoted" \\ back', amount: -0 }), created_at: 'not a time' },
  deal(6, '2026-01-01T00:00:00Z', {}),
];

const PLAN_A: ColumnPlan[] = [
  { apiName: 'name', columnName: 'name', propertyType: 'text', sqlType: 'VARCHAR' },
  { apiName: 'amount', columnName: 'amount', propertyType: 'number', sqlType: 'DOUBLE' },
];
// Another plan for the same records: a type changed, columns added (special names too), one column gone.
const PLAN_B: ColumnPlan[] = [
  { apiName: 'amount', columnName: 'amount', propertyType: 'text', sqlType: 'VARCHAR' },
  { apiName: 'close', columnName: 'close', propertyType: 'date', sqlType: 'DATE' },
  { apiName: 'won', columnName: 'won', propertyType: 'bool', sqlType: 'BOOLEAN' },
  { apiName: 'extra', columnName: 'extra', propertyType: 'shape', sqlType: 'JSON' },
  { apiName: '__proto__', columnName: 'proto', propertyType: 'text', sqlType: 'VARCHAR' },
  { apiName: '10', columnName: 'ten', propertyType: 'number', sqlType: 'DOUBLE' },
];

const lines = (rows: NdjsonRows) => [...rows.lines()];

/** Pages of `records`, added to `buffer` one after the other. */
async function addPages(buffer: EncodedRecords, records: readonly ServiceRecord[], pageSize: number): Promise<void> {
  for (let i = 0; i < records.length; i += pageSize) await buffer.add(records.slice(i, i + pageSize));
}

describe('a batch encoded page by page', () => {
  it('re-encoded for another plan, its rows are byte for byte the rows that plan encodes from the records', () => {
    const records = varied();
    const encodedForA = encodeRecords(records, PLAN_A, SYNCED_AT);
    expect(lines(reencodeRows(encodedForA.lines(), PLAN_A, PLAN_B, SYNCED_AT))).toEqual(lines(encodeRecords(records, PLAN_B, SYNCED_AT)));
    // And back: nothing the first plan's cells held is lost on the way.
    const encodedForB = encodeRecords(records, PLAN_B, SYNCED_AT);
    expect(lines(reencodeRows(encodedForB.lines(), PLAN_B, PLAN_A, SYNCED_AT))).toEqual(lines(encodeRecords(records, PLAN_A, SYNCED_AT)));
  });

  it('holds one row per id, the latest updated_at winning and a tie going to the later record, as a list batch would', async () => {
    // Versions of early records come back pages later, newer, older and tied, so rows are dropped from sealed chunks.
    const records: ServiceRecord[] = [];
    for (let n = 0; n < 300; n += 1) records.push(deal(n, '2026-01-02T00:00:00Z'));
    records.push(deal(3, '2026-01-03T00:00:00Z', { name: 'newer' }));
    records.push(deal(5, '2026-01-01T00:00:00Z', { name: 'older' }));
    records.push(deal(70, '2026-01-02T00:00:00.000000Z', { name: 'tied, later' }));
    records.push(deal(3, '2026-01-02T12:00:00+09:00', { name: 'older again' }));
    records.push(deal(299, '2026-01-04T00:00:00Z', { name: 'last, newer' }));
    // Past year 9999 by an offset: compared exactly, not as text.
    records.push(deal(80, '9999-12-31T23:00:00-05:00', { name: 'year 10000' }));
    records.push(deal(80, '9999-12-31T23:30:00-04:00', { name: 'year 10000, older' }));
    records.push(deal(81, '9999-12-31T23:30:00-04:00', { name: 'year 10000' }));
    records.push(deal(81, '9999-12-31T23:00:00-05:00', { name: 'year 10000, newer' }));
    // Before year 1 by an offset: its canonical instant is in year 0000 (1 BC).
    records.push(deal(400, '0001-01-01T00:00:00+01:00', { name: 'year 0' }));
    records.push(deal(400, '0001-01-01T00:30:00+01:00', { name: 'year 0, newer' }));
    records.push(deal(400, '9999-12-31T23:00:00-05:00', { name: 'year 10000, newest' }));
    const buffer = new EncodedRecords(PLAN_A, SYNCED_AT, false);
    await addPages(buffer, records, 50);
    expect(buffer.added).toBe(records.length);
    expect(buffer.rows.rows).toBe(301);
    expect(buffer.close()).toBe(buffer.rows);
    await expect(buffer.add([deal(1, '2026-01-05T00:00:00Z')])).rejects.toThrow(/after the buffer was closed/);
    expect(lines(buffer.rows).sort()).toEqual(lines(encodeRecords(dedupeBatch(records, false), PLAN_A, SYNCED_AT)).sort());
  });

  it('with observedWins holds the last record added for each id, whatever its updated_at', async () => {
    const records: ServiceRecord[] = [];
    for (let n = 0; n < 130; n += 1) records.push(deal(n, '2026-01-02T00:00:00Z'));
    records.push(deal(1, '2026-01-01T00:00:00Z', { name: 'older, observed last' }));
    records.push(deal(64, '2026-01-03T00:00:00Z', { name: 'newer' }));
    records.push(deal(64, '2026-01-01T00:00:00Z', { name: 'older, observed last' }));
    const buffer = new EncodedRecords(PLAN_A, SYNCED_AT, true);
    await addPages(buffer, records, 7);
    expect(lines(buffer.rows).sort()).toEqual(lines(encodeRecords(dedupeBatch(records, true), PLAN_A, SYNCED_AT)).sort());
  });

  it('a record without a valid updated_at makes the batch one that cannot be written, with the error a list batch gives', async () => {
    const records = [deal(1, '2026-01-01T00:00:00Z'), deal(2, 'yesterday'), deal(3, 'never')];
    const buffer = new EncodedRecords(PLAN_A, SYNCED_AT, false);
    await buffer.add(records);
    let listError: unknown;
    try {
      dedupeBatch(records, false);
    } catch (error) {
      listError = error;
    }
    expect(buffer.invalid?.error).toBeInstanceOf(SalesyncError);
    expect((buffer.invalid?.error as SalesyncError).code).toBe('warehouse_invalid_record');
    expect((buffer.invalid?.error as Error).message).toBe((listError as Error).message);
  });

  it('lets the event loop in whenever a turn has lasted its budget by its clock, however few records that took', async () => {
    // Each look at the clock finds 0.5 ms more: a 1 ms turn is over after two records.
    let clock = 0;
    const buffer = new EncodedRecords(PLAN_A, SYNCED_AT, false, { turnMs: 1, now: () => (clock += 0.5) });
    const turns = await turnsOthersGot(() => buffer.add(Array.from({ length: 40 }, (_, n) => deal(n, '2026-01-02T00:00:00Z'))));
    expect(buffer.rows.rows).toBe(40);
    expect(turns).toBeGreaterThanOrEqual(40 / 4);
  });
});

describe("a batch's ids", () => {
  it('are those of the rows it holds, one per id, however the rows were encoded', async () => {
    const records = [deal(1, '2026-01-02T00:00:00Z'), deal(2, '2026-01-02T00:00:00Z'), deal(1, '2026-01-03T00:00:00Z')];
    const buffer = new EncodedRecords(PLAN_A, SYNCED_AT, false);
    await buffer.add(records);
    expect(buffer.close().ids?.split('\n').sort()).toEqual([ID(1), ID(2)]);
    const listed = encodeRecords(dedupeBatch(records, false), PLAN_A, SYNCED_AT);
    expect(listed.ids?.split('\n').sort()).toEqual([ID(1), ID(2)]);
    expect(reencodeRows(listed.lines(), PLAN_A, PLAN_B, SYNCED_AT).ids?.split('\n').sort()).toEqual([ID(1), ID(2)]);
  });

  it('are not kept when one holds a newline', () => {
    expect(encodeRecords([{ ...deal(1, '2026-01-02T00:00:00Z'), id: 'a\nb' }], PLAN_A, SYNCED_AT).ids).toBeUndefined();
  });
});

describe('NDJSON rows', () => {
  it('a dropped line leaves its chunk, sealed or pending, and the rest keep their order', () => {
    const rows = new NdjsonRows();
    for (let i = 0; i < 150; i += 1) rows.push(`{"n":${i}}`);
    for (const i of [0, 63, 64, 100, 149]) rows.drop(i);
    rows.drop(64); // twice counts once
    expect(rows.rows).toBe(145);
    const kept = Array.from({ length: 150 }, (_, i) => i).filter((i) => ![0, 63, 64, 100, 149].includes(i));
    expect(lines(rows)).toEqual(kept.map((i) => `{"n":${i}}`));
    expect(Buffer.concat(rows.bytes()).toString()).toBe(kept.map((i) => `{"n":${i}}\n`).join(''));
  });

  it('are the UTF-8 of their lines whatever the text: every width of character, lone surrogates, lines far longer than a chunk', () => {
    const texts = [
      'ascii',
      'é ü Latin-1',
      '€ 漢字 three bytes',
      '😀 𝄞 four bytes',
      'lone \ud800 and \udfff surrogates',
      '',
      '漢'.repeat(70_000), // longer than the open chunk's room many times over
      `${'😀'.repeat(40_000)}x`,
    ];
    const pushed: string[] = [];
    const rows = new NdjsonRows();
    // Every text in every position of a chunk, and in chunks after one of wide lines.
    for (let i = 0; i < 200; i += 1) {
      const line = JSON.stringify({ i, text: texts[i % texts.length] });
      pushed.push(line);
      rows.push(line);
    }
    expect(Buffer.concat(rows.bytes()).equals(Buffer.from(pushed.map((line) => `${line}\n`).join('')))).toBe(true);
    expect(lines(rows)).toEqual(pushed.map((line) => Buffer.from(line).toString()));
  });

  it('past their spill size go to the spill chunk by chunk, hold no more than that in memory, and end as exactly the lines kept', async () => {
    const spilled: Buffer[] = [];
    const events: string[] = [];
    const spill: ChunkSpill = {
      path: '/nowhere/spill.ndjson',
      append: (chunks) => void spilled.push(...chunks.map((c) => Buffer.from(c))),
      finish: () => Promise.resolve(void events.push('finish')),
      discard: () => Promise.resolve(void events.push('discard')),
    };
    const rows = new NdjsonRows({ bytes: 2000, open: () => spill });
    const line = (i: number) => JSON.stringify({ n: i, pad: 'x'.repeat(i % 7) });
    let mostHeld = 0;
    for (let i = 0; i < 1000; i += 1) {
      rows.push(line(i));
      mostHeld = Math.max(mostHeld, rows.heldBytes);
    }
    expect(rows.spilledTo).toBe('/nowhere/spill.ndjson');
    // At most the spill size and the chunk whose sealing crossed it.
    expect(mostHeld).toBeLessThan(2000 + 64 * 40);
    expect(() => rows.bytes()).toThrow(/spilled to a file/);
    // Dropped in spilled chunks (the first), in the last spilled one, and in memory.
    const dropped = [0, 5, 63, 64, 500, 998, 999];
    for (const i of dropped) rows.drop(i);
    const { path, droppedLines } = await rows.finishSpill();
    expect(path).toBe('/nowhere/spill.ndjson');
    expect(events).toEqual(['finish']);
    const file = Buffer.concat(spilled).toString().split('\n').slice(0, -1);
    const kept = file.filter((_, i) => !droppedLines.includes(i));
    expect(kept).toEqual(
      Array.from({ length: 1000 }, (_, i) => i)
        .filter((i) => !dropped.includes(i))
        .map(line),
    );
    expect(rows.rows).toBe(1000 - dropped.length);
  });

  it('discard their spill when let go unfinished (a batch abandoned), and never spill when read first', () => {
    const events: string[] = [];
    const spill = (): ChunkSpill => ({
      path: 'p',
      append: () => undefined,
      finish: () => Promise.resolve(void events.push('finish')),
      discard: () => Promise.resolve(void events.push('discard')),
    });
    const abandoned = new NdjsonRows({ bytes: 100, open: spill });
    for (let i = 0; i < 200; i += 1) abandoned.push(`{"n":${i}}`);
    abandoned.release();
    expect(events).toEqual(['discard']);
    const small = new NdjsonRows({ bytes: 1_000_000, open: spill });
    for (let i = 0; i < 200; i += 1) small.push(`{"n":${i}}`);
    expect(small.spilledTo).toBeNull();
    expect(lines(small)).toHaveLength(200);
    expect(events).toEqual(['discard']);
  });

  it('whose spill failed part way are neither added to nor read: the file may hold part of the chunks', () => {
    const full = new Error('ENOSPC: no space left on device, write');
    const rows = new NdjsonRows({
      bytes: 100,
      open: () => ({
        path: 'p',
        append: () => {
          throw full;
        },
        finish: () => Promise.resolve(),
        discard: () => Promise.resolve(),
      }),
    });
    expect(() => {
      for (let i = 0; i < 200; i += 1) rows.push(`{"n":${i}}`);
    }).toThrow(full);
    expect(() => rows.push('{}')).toThrow(full);
    expect(() => rows.bytes()).toThrow(full);
  });

  it('refuses a line pushed or dropped once its bytes are read', () => {
    const rows = new NdjsonRows();
    rows.push('{}');
    rows.bytes();
    expect(() => rows.push('{}')).toThrow(/after the rows were read/);
    expect(() => rows.drop(0)).toThrow(/after the rows were read/);
  });
});

describe('a record buffer committed to the warehouse', () => {
  let dir: string | undefined;
  const open = (name: string): Warehouse => openWarehouse({ path: join(dir!, `${name}.duckdb`), lockTimeoutMs: 1500 });
  const defs = (names: string[]): PropertyDefinition[] =>
    names.map((api_name) => ({
      api_name,
      display_name: api_name,
      property_type: 'text',
      is_core: false,
      is_required_on_create: false,
      options: [],
    }));
  const checkpoint = { cursor: null, updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' as const };

  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('gathered before a property was added, is written under the new plan: the same rows as the records committed as a list', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-buffer-'));
    const records = [
      deal(1, '2026-01-02T00:00:00Z', { name: 'one', stage: 'won' }),
      deal(2, '2026-01-02T00:00:00Z', { name: 'two', stage: 'lost' }),
      deal(1, '2026-01-03T00:00:00Z', { name: 'one, newer', stage: 'open' }),
    ];
    const buffered = open('buffered');
    const listed = open('listed');
    try {
      await buffered.applyPropertyDefinitions('deals', defs(['name']));
      const buffer = buffered.recordBuffer('deals', { observedWins: false });
      expect(buffer).toBeInstanceOf(EncodedRecords);
      await buffer.add(records);
      await buffered.applyPropertyDefinitions('deals', defs(['name', 'stage']));
      expect(await buffered.commitBatch('deals', { records: buffer, checkpoint })).toMatchObject({ written: 2 });

      await listed.applyPropertyDefinitions('deals', defs(['name', 'stage']));
      await listed.commitBatch('deals', { records, checkpoint });
      const rows = (w: Warehouse) => w.query('SELECT * EXCLUDE (_synced_at, _version_observed_at, _version_seq) FROM deals ORDER BY id');
      expect(await rows(buffered)).toEqual(await rows(listed));
      expect((await rows(buffered)).map((r) => r.stage)).toEqual(['open', 'lost']);
    } finally {
      await buffered.close();
      await listed.close();
    }
  });

  it('larger than its spill size, commits each id once, the latest winning even over a version already spilled', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-buffer-'));
    const warehouse = open('w');
    try {
      await warehouse.applyPropertyDefinitions('deals', defs(['name']));
      // Rows of about 1 KB: past BATCH_SPILL_BYTES well before the end.
      const count = Math.ceil((1.5 * BATCH_SPILL_BYTES) / 1000);
      const records = Array.from({ length: count }, (_, n) => deal(n, '2026-01-02T00:00:00Z', { name: `${n} ${'x'.repeat(900)}` }));
      // Later versions of early records (spilled by then), an older one that must not win, and of a late one.
      records.push(deal(0, '2026-01-03T00:00:00Z', { name: 'zero, newer' }));
      records.push(deal(1, '2026-01-01T00:00:00Z', { name: 'one, older' }));
      records.push(deal(64, '2026-01-03T00:00:00Z', { name: 'sixty-four, newer' }));
      records.push(deal(count - 1, '2026-01-03T00:00:00Z', { name: 'last, newer' }));
      const buffer = warehouse.recordBuffer('deals', { observedWins: false }) as EncodedRecords;
      await addPages(buffer, records, 200);
      const spilledTo = buffer.rows.spilledTo;
      expect(spilledTo).not.toBeNull();
      expect(buffer.rows.heldBytes).toBeLessThan(BATCH_SPILL_BYTES + 64 * 1100);
      expect(await warehouse.commitBatch('deals', { records: buffer, checkpoint })).toMatchObject({ written: count });
      expect(await warehouse.query('SELECT count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS ids FROM deals')).toEqual([
        { n: count, ids: count },
      ]);
      const names = await warehouse.query(
        `SELECT id, name FROM deals WHERE id IN ('${ID(0)}', '${ID(1)}', '${ID(64)}', '${ID(count - 1)}') ORDER BY id`,
      );
      expect(names.map((r) => String(r.name).slice(0, 20))).toEqual([
        'zero, newer',
        `1 ${'x'.repeat(18)}`,
        'sixty-four, newer',
        'last, newer',
      ]);
      // Its stage file is gone with its commit.
      expect(existsSync(spilledTo!)).toBe(false);
    } finally {
      await warehouse.close();
    }
  });

  it('of ids already stored, after a batch of new ids, replaces their rows: one row and one more version per id, with key lines or without', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-buffer-'));
    const warehouse = open('w');
    try {
      await warehouse.applyPropertyDefinitions('deals', defs(['name']));
      const batchOf = async (records: ServiceRecord[], keyLines: boolean) => {
        const buffer = warehouse.recordBuffer('deals', { observedWins: false }) as EncodedRecords;
        await buffer.add(records);
        // Key lines unless the last batch found no stored id (a first load spares them).
        expect(buffer.rows.keyBytes() !== undefined).toBe(keyLines);
        return warehouse.commitBatch('deals', { records: buffer, checkpoint });
      };
      expect(await batchOf([deal(1, '2026-01-02T00:00:00Z'), deal(2, '2026-01-02T00:00:00Z')], true)).toMatchObject({ written: 2 });
      // The last batch found no id stored; this one holds a stored id, a new one and a stored id met twice.
      const again = [
        deal(2, '2026-01-03T00:00:00Z', { name: 'two, newer' }),
        deal(3, '2026-01-03T00:00:00Z'),
        deal(1, '2026-01-03T00:00:00Z', { name: 'one, first' }),
        deal(1, '2026-01-04T00:00:00Z', { name: 'one, newer' }),
      ];
      expect(await batchOf(again, false)).toMatchObject({ written: 3, changed: 3 });
      // The last one found stored ids: this one is decided from its key lines.
      const third = [deal(3, '2026-01-05T00:00:00Z', { name: 'three, newer' }), deal(2, '2026-01-02T00:00:00Z', { name: 'two, older' })];
      expect(await batchOf(third, true)).toMatchObject({ written: 1, changed: 1 });
      expect(await warehouse.query('SELECT id, name FROM deals ORDER BY id')).toEqual([
        { id: ID(1), name: 'one, newer' },
        { id: ID(2), name: 'two, newer' },
        { id: ID(3), name: 'three, newer' },
      ]);
      expect(await warehouse.query('SELECT id, count(*)::INTEGER AS versions FROM deals_history GROUP BY id ORDER BY id')).toEqual([
        { id: ID(1), versions: 2 },
        { id: ID(2), versions: 2 },
        { id: ID(3), versions: 2 },
      ]);
    } finally {
      await warehouse.close();
    }
  });

  it('abandoned after it spilled (its walk failed), leaves no file once the warehouse closes', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-buffer-'));
    const warehouse = open('w');
    let spilledTo: string | null = null;
    try {
      await warehouse.applyPropertyDefinitions('deals', defs(['name']));
      const buffer = warehouse.recordBuffer('deals', { observedWins: false }) as EncodedRecords;
      const count = Math.ceil((1.5 * BATCH_SPILL_BYTES) / 1000);
      await addPages(
        buffer,
        Array.from({ length: count }, (_, n) => deal(n, '2026-01-02T00:00:00Z', { name: 'x'.repeat(950) })),
        200,
      );
      spilledTo = buffer.rows.spilledTo;
      expect(spilledTo).not.toBeNull();
      expect(existsSync(spilledTo!)).toBe(true);
    } finally {
      await warehouse.close();
    }
    expect(existsSync(spilledTo!)).toBe(false);
  });

  it('that cannot spill (its temporary directory gone) fails with a warehouse error naming the file, and cannot be committed', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-buffer-'));
    const warehouse = open('w');
    const tmp = process.env.TMPDIR;
    try {
      await warehouse.applyPropertyDefinitions('deals', defs(['name']));
      const buffer = warehouse.recordBuffer('deals', { observedWins: false });
      process.env.TMPDIR = join(dir, 'gone');
      const count = Math.ceil((1.5 * BATCH_SPILL_BYTES) / 1000);
      const adding = addPages(
        buffer as EncodedRecords,
        Array.from({ length: count }, (_, n) => deal(n, '2026-01-02T00:00:00Z', { name: 'x'.repeat(950) })),
        200,
      );
      const error = await adding.then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SalesyncError);
      expect((error as SalesyncError).code).toBe('warehouse_error');
      expect((error as Error).message).toContain(join(dir, 'gone', 'salesync-stage-'));
      process.env.TMPDIR = tmp;
      await expect(warehouse.commitBatch('deals', { records: buffer, checkpoint })).rejects.toThrow(/temporary directory/);
      expect(await warehouse.query('SELECT count(*)::INTEGER AS n FROM deals')).toEqual([{ n: 0 }]);
    } finally {
      if (tmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmp;
      await warehouse.close();
    }
  });

  it('is refused when committed under another dedupe rule than it was opened with, and nothing is written', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-buffer-'));
    const warehouse = open('w');
    try {
      await warehouse.applyPropertyDefinitions('deals', defs(['name']));
      const buffer = warehouse.recordBuffer('deals', { observedWins: true });
      await buffer.add([deal(1, '2026-01-02T00:00:00Z')]);
      await expect(warehouse.commitBatch('deals', { records: buffer, checkpoint })).rejects.toThrow(/dedupe rule/);
      expect(await warehouse.query('SELECT count(*)::INTEGER AS n FROM deals')).toEqual([{ n: 0 }]);
    } finally {
      await warehouse.close();
    }
  });
});
