/**
 * Many properties appearing at once on a table that holds rows rebuild it in the definitions' transaction
 * (`rebuildWithColumns`): every stored row and value, the columns kept after a type change, history, views and
 * content hashes come through, the new columns read what a fresh write gives, and a failure part way leaves the
 * table as it was, for a rerun to complete. A fill by page cut short is finished by the rebuild, or else by the next
 * session's first commit into the table.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, ServiceRecord } from '../../src/core/types.js';
import type { ColumnPlan } from '../../src/warehouse/types.js';
import { openWarehouse, quoteIdentifier, type Warehouse } from '../../src/warehouse/index.js';
import { COLUMN_FILLS_TABLE, fillPendingColumns, type CopyPage } from '../../src/warehouse/column-fill.js';
import { inTransaction } from '../../src/warehouse/connection.js';
import { tableColumns } from '../../src/warehouse/catalog.js';
import { applyDefinitions, rebuildAdds } from '../../src/warehouse/schema.js';
import { rebuildViews } from '../../src/warehouse/views.js';
import { VERSION_COLUMNS } from '../../src/warehouse/history-names.js';
import {
  bareWarehouseHolding,
  differencesFromFresh as freshDifferences,
  mixedDefinitions,
  mixedProperties,
  tableDifferences,
} from '../support/mixed-properties.js';

const WIDTH = 60;
const ROWS = 300;
const SYNCED_AT = '2026-03-01T00:00:00Z';
const SYSTEM_TAIL = ['_properties', '_synced_at', '_deleted_at', '_content_hash', ...VERSION_COLUMNS.map((c) => c.name)];

function recordOf(row: number, day = 2, seed = row): ServiceRecord {
  return {
    id: `D${String(row).padStart(17, '0')}`,
    created_at: '2026-01-01T00:00:00Z',
    updated_at: `2026-01-0${day}T00:00:00Z`,
    properties: mixedProperties(seed, WIDTH) as ServiceRecord['properties'],
  };
}

class Crash extends Error {}

const batch = (records: ServiceRecord[], cursor = 'c') => ({
  records,
  checkpoint: { cursor, updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' as const },
});

/** `SELECT <columns> FROM <relation> ORDER BY <order>` through the warehouse, each column quoted. */
async function rowsOf(warehouse: Warehouse, relation: string, columns: readonly string[], order: string): Promise<unknown[]> {
  return warehouse.query(`SELECT ${columns.map(quoteIdentifier).join(', ')} FROM ${relation} ORDER BY ${order}`);
}

async function columnsOf(warehouse: Warehouse, table: string): Promise<string[]> {
  const rows = await warehouse.query(
    `SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = '${table}' ORDER BY column_index`,
  );
  return rows.map((r) => String(r.column_name));
}

async function markerExists(warehouse: Warehouse): Promise<boolean> {
  const rows = await warehouse.query(`SELECT count(*)::INTEGER AS n FROM duckdb_tables() WHERE table_name = '${COLUMN_FILLS_TABLE}'`);
  return rows[0]?.n !== 0;
}

describe('adding many columns to a table that holds rows', () => {
  let dir: string;
  const opened: Warehouse[] = [];
  const open = (name: string): Warehouse => {
    const warehouse = openWarehouse({ path: join(dir, name), lockTimeoutMs: 1500 });
    opened.push(warehouse);
    return warehouse;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-rebuild-'));
  });

  afterEach(async () => {
    for (const warehouse of opened.splice(0)) await warehouse.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The same records, the final version of each, written into a fresh file defined with `definitions` first. */
  async function freshMirror(definitions: PropertyDefinition[], records: ServiceRecord[]): Promise<Warehouse> {
    const fresh = open('fresh.duckdb');
    await fresh.applyPropertyDefinitions('deals', definitions);
    await fresh.commitBatch('deals', batch(records));
    return fresh;
  }

  it('rebuilds the table: rows, values, kept columns, history and hashes as they were, new columns as a fresh write', async () => {
    const warehouse = open('mirror.duckdb');
    // Ten properties defined, every deal written, a third of them written again (two versions in history).
    await warehouse.applyPropertyDefinitions('deals', mixedDefinitions(0, 10));
    await warehouse.commitBatch('deals', batch(Array.from({ length: ROWS }, (_, n) => recordOf(n, 1, n + 1))));
    const latest = Array.from({ length: ROWS }, (_, n) => recordOf(n, n < ROWS / 3 ? 2 : 1, n < ROWS / 3 ? n : n + 1));
    await warehouse.commitBatch('deals', batch(latest.slice(0, ROWS / 3), 'd'));
    // custom_1 (number) becomes text: custom_1__varchar is added, custom_1 kept with its values.
    const retyped = mixedDefinitions(0, 10).map((d) => (d.api_name === 'custom_1' ? { ...d, property_type: 'text' } : d));
    await warehouse.applyPropertyDefinitions('deals', retyped);
    const before = await columnsOf(warehouse, 'deals');
    expect(before).toContain('custom_1__varchar');
    const storedBefore = await rowsOf(warehouse, 'deals', before, 'id');
    const historyBefore = await warehouse.query(`SELECT * FROM deals_history ORDER BY id, change_seq`);
    const keptBefore = await warehouse.query(`SELECT count(custom_1)::INTEGER AS n FROM deals`);
    expect(keptBefore[0]!.n).toBeGreaterThan(0);

    const all = [...retyped, ...mixedDefinitions(10, WIDTH)];
    expect(rebuildAdds(WIDTH - 10, before.length)).toBe(true);
    await warehouse.applyPropertyDefinitions('deals', all);

    const after = await columnsOf(warehouse, 'deals');
    const added = mixedDefinitions(10, WIDTH).map((d) => d.api_name);
    // Laid out as a table created with these columns (the system ones last), not as ALTERs leave it.
    expect(after).toEqual([...before.filter((c) => !SYSTEM_TAIL.includes(c)), ...added, ...SYSTEM_TAIL]);
    // Every stored row and value, the kept column and content hashes among them, as it was.
    expect(await rowsOf(warehouse, 'deals', before, 'id')).toEqual(storedBefore);
    expect(await warehouse.query(`SELECT count(_content_hash)::INTEGER AS n FROM deals`)).toEqual([{ n: ROWS }]);
    expect(await warehouse.query(`SELECT * FROM deals_history ORDER BY id, change_seq`)).toEqual(historyBefore);
    // The views read the new table, new columns by display name.
    const view = await warehouse.query(`SELECT id, "Custom 59" FROM deals_view ORDER BY id`);
    expect(view).toHaveLength(ROWS);
    // Nothing left to fill: the rebuild filled the new columns as it copied.
    expect(await markerExists(warehouse)).toBe(false);

    const fresh = await freshMirror(all, latest);
    const compared = ['id', ...added];
    const expected = await rowsOf(fresh, 'deals', compared, 'id');
    expect(await rowsOf(warehouse, 'deals', compared, 'id')).toEqual(expected);
    // Not vacuous: values of every type were filled.
    for (const column of added.slice(0, 7)) expect(expected.some((row) => (row as Record<string, unknown>)[column] !== null)).toBe(true);
  });

  it("finishes a fill cut short at the next session's first commit into the table", async () => {
    const path = join(dir, 'mirror.duckdb');
    const first = open('mirror.duckdb');
    const records = Array.from({ length: ROWS }, (_, n) => recordOf(n));
    await first.commitBatch('deals', batch(records));
    await first.close();
    // Columns added by ALTER and filled one page of 50 rows before the process died.
    const definitions = mixedDefinitions(0, 8);
    const instance = await DuckDBInstance.create(path);
    try {
      const connection = await instance.connect();
      await connection.run(`SET TimeZone = 'UTC'`);
      await inTransaction(connection, async () => {
        await applyDefinitions(connection, 'deals', 'deals', definitions, SYNCED_AT, { addColumnsBy: 'alter' });
        await rebuildViews(connection);
      });
      await expect(
        fillPendingColumns(connection, 'deals', {
          pageCells: 50 * definitions.length,
          onPage: () => {
            throw new Crash('the process died here');
          },
        }),
      ).rejects.toBeInstanceOf(Crash);
      connection.closeSync();
    } finally {
      instance.closeSync();
    }

    const next = open('mirror.duckdb');
    expect(await markerExists(next)).toBe(true);
    await next.commitBatch('deals', batch([recordOf(ROWS)]));
    expect(await markerExists(next)).toBe(false);
    const fresh = await freshMirror(definitions, [...records, recordOf(ROWS)]);
    const compared = ['id', ...definitions.map((d) => d.api_name)];
    expect(await rowsOf(next, 'deals', compared, 'id')).toEqual(await rowsOf(fresh, 'deals', compared, 'id'));
  });
});

describe('rebuildWithColumns, part way', () => {
  let instance: DuckDBInstance;
  let connection: DuckDBConnection;
  const records = Array.from({ length: ROWS }, (_, n) => recordOf(n));

  beforeEach(async () => {
    ({ instance, connection } = await bareWarehouseHolding(records, SYNCED_AT));
  });

  afterEach(() => {
    connection.closeSync();
    instance.closeSync();
  });

  /** Rows of `deals` unlike the same records freshly written into a table of `plan`, and the reverse. */
  const differencesFromFresh = (plan: readonly ColumnPlan[]) =>
    freshDifferences(connection, records, plan, SYNCED_AT, ['_properties', '_content_hash']);

  async function definitionCount(): Promise<number> {
    const reader = await connection.runAndReadAll(`SELECT count(*)::INTEGER FROM property_definitions`);
    return Number(reader.getRows()[0]![0]);
  }

  it('leaves the table as it was when it fails part way, and a rerun completes', async () => {
    await connection.run(`CREATE TABLE stored AS SELECT * FROM deals`);
    const columnsBefore = await tableColumns(connection, 'deals');
    const define = (onPage?: (page: CopyPage) => void) =>
      inTransaction(connection, () =>
        applyDefinitions(connection, 'deals', 'deals', mixedDefinitions(0, WIDTH), SYNCED_AT, {
          copy: { maxPageRows: 100, ...(onPage ? { onPage } : {}) },
        }),
      );
    let copiedPages = 0;
    await expect(
      define(() => {
        copiedPages += 1;
        if (copiedPages === 2) throw new Crash('the process died here');
      }),
    ).rejects.toBeInstanceOf(Crash);
    // Two pages copied, then nothing of it kept: the table, its rows and the definitions as before.
    expect(await tableColumns(connection, 'deals')).toEqual(columnsBefore);
    const all = (columnsBefore ?? []).map(quoteIdentifier).join(', ');
    expect(await tableDifferences(connection, 'deals', 'stored', all)).toEqual([0, 0]);
    expect(await definitionCount()).toBe(0);
    expect(await tableColumns(connection, '_salesync_rebuild_deals')).toBeNull();

    const pages: CopyPage[] = [];
    const plan = await define((page) => void pages.push(page));
    expect(pages.map((p) => p.rows)).toEqual([100, 100, 100]);
    expect(await definitionCount()).toBe(WIDTH);
    expect(await differencesFromFresh(plan)).toEqual([0, 0]);
  });

  it('fills, for every row, the columns an earlier fill by page left unfinished, and unmarks them', async () => {
    await inTransaction(connection, () =>
      applyDefinitions(connection, 'deals', 'deals', mixedDefinitions(0, 5), SYNCED_AT, { addColumnsBy: 'alter' }),
    );
    await expect(
      fillPendingColumns(connection, 'deals', {
        pageCells: 100 * 5,
        onPage: () => {
          throw new Crash('the process died here');
        },
      }),
    ).rejects.toBeInstanceOf(Crash);
    expect(await tableColumns(connection, COLUMN_FILLS_TABLE)).not.toBeNull();

    const plan = await inTransaction(connection, () =>
      applyDefinitions(connection, 'deals', 'deals', mixedDefinitions(0, WIDTH), SYNCED_AT, { addColumnsBy: 'rebuild' }),
    );
    expect(await tableColumns(connection, COLUMN_FILLS_TABLE)).toBeNull();
    expect(await differencesFromFresh(plan)).toEqual([0, 0]);
  });
});

describe('rebuildAdds', () => {
  it('alters a wide table gaining a few columns, and rebuilds one gaining many', () => {
    expect(rebuildAdds(0, 10)).toBe(false);
    expect(rebuildAdds(1, 2008)).toBe(false);
    expect(rebuildAdds(100, 2008)).toBe(false);
    expect(rebuildAdds(700, 2008)).toBe(true);
    expect(rebuildAdds(2000, 8)).toBe(true);
    expect(rebuildAdds(3, 9)).toBe(true);
  });
});
