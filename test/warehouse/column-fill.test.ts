/**
 * Columns added to a table that holds rows are filled page by page, each page its own transaction that moves the
 * marker on: a fill cut short resumes where it stopped and ends with every column what a fresh write gives.
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, ServiceRecord } from '../../src/core/types.js';
import type { ColumnPlan } from '../../src/warehouse/types.js';
import { COLUMN_FILLS_TABLE, fillPendingColumns, type FillPage } from '../../src/warehouse/column-fill.js';
import { inTransaction } from '../../src/warehouse/connection.js';
import { quoteIdentifier } from '../../src/warehouse/identifiers.js';
import { tableColumns } from '../../src/warehouse/catalog.js';
import { applyDefinitions } from '../../src/warehouse/schema.js';
import {
  bareWarehouseHolding,
  differencesFromFresh as freshDifferences,
  mixedDefinitions,
  mixedProperties,
} from '../support/mixed-properties.js';

const WIDTH = 21;
const ROWS = 240;
const SYNCED_AT = '2026-03-01T00:00:00Z';

function recordOf(row: number): ServiceRecord {
  return {
    id: `D${String(row).padStart(17, '0')}`,
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-02T00:00:00Z',
    properties: mixedProperties(row, WIDTH) as ServiceRecord['properties'],
  };
}

const records = Array.from({ length: ROWS }, (_, n) => recordOf(n));

/** Rows of `deals` unlike the same records freshly written into a table of `plan`, and the reverse. */
const differencesFromFresh = (connection: DuckDBConnection, plan: readonly ColumnPlan[]) =>
  freshDifferences(connection, records, plan, SYNCED_AT);

async function markerRows(connection: DuckDBConnection): Promise<[string, string][]> {
  if (!((await tableColumns(connection, COLUMN_FILLS_TABLE)) ?? []).length) return [];
  const reader = await connection.runAndReadAll(
    `SELECT DISTINCT column_name, filled_through FROM ${COLUMN_FILLS_TABLE} ORDER BY column_name`,
  );
  return reader.getRows().map(([c, f]) => [String(c), String(f)]);
}

async function filledRows(connection: DuckDBConnection, column: string): Promise<number> {
  const reader = await connection.runAndReadAll(`SELECT count(${quoteIdentifier(column)}) FROM deals`);
  return Number(reader.getRows()[0]![0]);
}

class Crash extends Error {}

describe('fillPendingColumns', () => {
  let instance: DuckDBInstance;
  let connection: DuckDBConnection;

  beforeEach(async () => {
    ({ instance, connection } = await bareWarehouseHolding(records, SYNCED_AT));
  });

  afterEach(() => {
    connection.closeSync();
    instance.closeSync();
  });

  // By ALTER, as a few columns on a wide table are added: a rebuild would leave nothing to fill.
  const define = (definitions: PropertyDefinition[], at = SYNCED_AT) =>
    inTransaction(connection, () => applyDefinitions(connection, 'deals', 'deals', definitions, at, { addColumnsBy: 'alter' }));

  it('fills in pages of at most pageCells ÷ columns rows, each committed with the marker moved on', async () => {
    const plan = await define(mixedDefinitions(0, WIDTH));
    // The columns exist, marked and still empty, once the definitions' transaction has committed.
    expect(await filledRows(connection, 'custom_4')).toBe(0);
    expect((await markerRows(connection)).map(([, through]) => through)).toEqual(Array<string>(WIDTH).fill(''));

    const pages: FillPage[] = [];
    const markers: [string, string][][] = [];
    const result = await fillPendingColumns(connection, 'deals', {
      pageCells: 50 * WIDTH,
      onPage: async (page) => {
        pages.push(page);
        markers.push(await markerRows(connection));
      },
    });
    expect(pages.map((p) => p.pageRows)).toEqual([50, 50, 50, 50, 50]);
    expect(pages.map((p) => p.rows)).toEqual([50, 50, 50, 50, 40]);
    for (const page of pages) expect(page.columns).toHaveLength(WIDTH);
    expect(result.pages).toBe(5);
    // After each page but the last, the marker names that page's last id; after the last, it is gone.
    expect(markers.slice(0, 4).map((m) => new Set(m.map(([, through]) => through)))).toEqual(
      [49, 99, 149, 199].map((n) => new Set([records[n]!.id])),
    );
    expect(markers[4]).toEqual([]);
    expect(await tableColumns(connection, COLUMN_FILLS_TABLE)).toBeNull();
    expect(await differencesFromFresh(connection, plan)).toEqual([0, 0]);
  });

  it('resumes a fill cut short after two pages where it stopped, and ends equal to a fresh write', async () => {
    const plan = await define(mixedDefinitions(0, WIDTH));
    let pagesBeforeCrash = 0;
    await expect(
      fillPendingColumns(connection, 'deals', {
        pageCells: 60 * WIDTH,
        onPage: () => {
          pagesBeforeCrash += 1;
          if (pagesBeforeCrash === 2) throw new Crash('the process died here');
        },
      }),
    ).rejects.toBeInstanceOf(Crash);
    // Two pages committed: 120 rows filled, the rest not, and the marker says so.
    expect(new Set((await markerRows(connection)).map(([, through]) => through))).toEqual(new Set([records[119]!.id]));
    const stored = await connection.runAndReadAll(
      `SELECT count(*) FILTER (WHERE custom_0 IS NOT NULL AND id > $1)::INTEGER, count(*) FILTER (WHERE custom_0 IS NOT NULL)::INTEGER FROM deals`,
      [records[119]!.id],
    );
    const [beyond, filled] = stored.getRows()[0]!.map(Number);
    expect(beyond).toBe(0);
    expect(filled).toBeGreaterThan(0);
    expect(await differencesFromFresh(connection, plan)).not.toEqual([0, 0]);

    const resumed: FillPage[] = [];
    await fillPendingColumns(connection, 'deals', { pageCells: 60 * WIDTH, onPage: (page) => void resumed.push(page) });
    // From where it stopped, not from the start.
    expect(resumed[0]!.after).toBe(records[119]!.id);
    // 240 rows in pages of 60: the last page finds no row past the fourth, and ends the fill.
    expect(resumed.map((p) => p.rows)).toEqual([60, 60, 0]);
    expect(await tableColumns(connection, COLUMN_FILLS_TABLE)).toBeNull();
    expect(await differencesFromFresh(connection, plan)).toEqual([0, 0]);
  });

  it('fills columns defined while an earlier fill was cut short, each from its own point', async () => {
    await define(mixedDefinitions(0, 10));
    await expect(
      fillPendingColumns(connection, 'deals', {
        pageCells: 100 * 10,
        onPage: () => {
          throw new Crash('the process died here');
        },
      }),
    ).rejects.toBeInstanceOf(Crash);
    const plan = await define(mixedDefinitions(0, WIDTH), '2026-03-02T00:00:00Z');
    const pages: FillPage[] = [];
    await fillPendingColumns(connection, 'deals', { pageCells: 100 * 10, onPage: (page) => void pages.push(page) });
    // The new columns start from the first row; the earlier ones go on from row 100.
    expect(pages[0]!.after).toBe('');
    expect(pages[0]!.columns).toHaveLength(WIDTH - 10);
    expect(pages.some((p) => p.after === records[99]!.id && p.columns.length === 10)).toBe(true);
    expect(await differencesFromFresh(connection, plan)).toEqual([0, 0]);
  });

  it('unmarks a column dropped before its fill finished', async () => {
    await define(mixedDefinitions(0, 3));
    await connection.run(`ALTER TABLE deals DROP COLUMN custom_1`);
    await fillPendingColumns(connection, 'deals');
    expect(await tableColumns(connection, COLUMN_FILLS_TABLE)).toBeNull();
    expect(await filledRows(connection, 'custom_0')).toBeGreaterThan(0);
  });
});
