import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServiceRecord } from '../../src/core/types.js';
import { ensureHistoryTables } from '../../src/warehouse/history.js';
import { quoteIdentifier } from '../../src/warehouse/identifiers.js';
import { encodeRecords, joinIds, NdjsonRows, recordEncoder } from '../../src/warehouse/rows.js';
import { recordTableDdl } from '../../src/warehouse/schema.js';
import type { ColumnPlan } from '../../src/warehouse/types.js';
import { nextLookup, upsertRecords, type StoredLookup, type UpsertOptions } from '../../src/warehouse/upsert.js';
import { openBareWarehouse, tableDifferences } from '../support/mixed-properties.js';

const plan: ColumnPlan[] = [
  { apiName: 'name', columnName: 'name', propertyType: 'text', sqlType: 'VARCHAR' },
  { apiName: 'amount', columnName: 'amount', propertyType: 'number', sqlType: 'DOUBLE' },
];
const ID = (n: number) => `D${String(n).padStart(17, '0')}`;
const deal = (n: number, updated_at: string, amount: number): ServiceRecord => ({
  id: ID(n),
  properties: { name: `deal ${n}`, amount },
  created_at: '2026-01-01T00:00:00Z',
  updated_at,
});
const T1 = '2026-02-01T00:00:00Z';
const T2 = '2026-03-01T00:00:00Z';
const T0 = '2026-01-15T00:00:00Z';

/** A table's rows (and its history's) in a text that compares whole: every column but the sequence both tables draw from. */
async function contents(connection: DuckDBConnection, table: string): Promise<string> {
  const rows = await connection.runAndReadAll(`SELECT * EXCLUDE (_synced_at, _version_seq) FROM ${quoteIdentifier(table)} ORDER BY id`);
  const history = await connection.runAndReadAll(
    `SELECT * EXCLUDE (change_seq) FROM ${quoteIdentifier(`${table}_history`)} ORDER BY id, valid_from, is_current`,
  );
  return JSON.stringify([rows.getRowsJson(), history.getRowsJson()]);
}

let opened: { instance: DuckDBInstance; connection: DuckDBConnection };

/** The ways a batch can be looked up and decided: by ids first or the stored rows at once, from key lines or from the rows. */
const variants: [table: string, lookup: StoredLookup, keyLines: boolean][] = [
  ['by_ids', 'ids', true],
  ['by_rows', 'rows', true],
  ['by_ids_unkeyed', 'ids', false],
  ['by_rows_unkeyed', 'rows', false],
];

/** `records` as the warehouse encodes a batch, with key lines or without. */
function encoded(records: readonly ServiceRecord[], keyLines: boolean): NdjsonRows {
  if (keyLines) return encodeRecords(records, plan, '2026-05-01T00:00:00Z');
  const encode = recordEncoder(plan, '2026-05-01T00:00:00Z', false);
  const rows = new NdjsonRows();
  for (const record of records) rows.push(encode(record).line);
  rows.ids = joinIds(records.map((r) => r.id));
  return rows;
}

beforeEach(async () => {
  opened = await openBareWarehouse();
  for (const [table] of variants) {
    await opened.connection.run(recordTableDdl(table, plan));
    await ensureHistoryTables(opened.connection, [table]);
  }
});

afterEach(() => {
  opened.connection.closeSync();
  opened.instance.closeSync();
});

describe('how a batch finds what is stored for its ids', () => {
  it('a table written with ids looked up first, or decided from its rows without key lines, ends batch after batch as one written with the stored rows joined at once', async () => {
    const { connection } = opened;
    const versions = (observedAt: string): UpsertOptions['versions'] => ({
      source: 'incremental',
      runId: null,
      committedAt: observedAt,
      observedAt,
    });
    const steps: { label: string; records: ServiceRecord[]; options?: UpsertOptions; before?: string }[] = [
      { label: 'new ids only', records: [deal(1, T1, 10), deal(2, T1, 20), deal(3, T1, 30)] },
      { label: 'the same content again', records: [deal(1, T1, 10)] },
      { label: 'changed, new and older in one batch', records: [deal(2, T2, 21), deal(4, T1, 40), deal(3, T0, 31)] },
      { label: 'an older version observed last', records: [deal(3, T0, 32)], options: { observedWins: true } },
      {
        label: 'a row marked deleted comes back',
        before: `UPDATE $table SET _deleted_at = '2026-04-01T00:00:00Z' WHERE id = '${ID(1)}'`,
        records: [deal(1, T1, 10)],
      },
      {
        label: 'a row stored before content hashes',
        before: `UPDATE $table SET _content_hash = NULL WHERE id = '${ID(4)}'`,
        records: [deal(4, T1, 40), deal(5, T1, 50)],
      },
      { label: 'a sweep that writes only what differs', records: [deal(2, T2, 21), deal(5, T2, 55)], options: { onlyChanged: true } },
    ];
    for (const [i, step] of steps.entries()) {
      const results: unknown[] = [];
      for (const [table, lookup, keyLines] of variants) {
        if (step.before) await connection.run(step.before.replace('$table', quoteIdentifier(table)));
        const lines = encoded(step.records, keyLines);
        const { written, changed, stored } = await upsertRecords(connection, table, plan, [], lines, {
          ...step.options,
          lookup,
          versions: versions(`2026-05-0${i + 1}T00:00:00Z`),
        });
        results.push({ written, changed, stored });
      }
      for (const [j, [table]] of variants.entries()) {
        expect(results[j], `${step.label}: ${table}`).toEqual(results[0]);
        expect(await contents(connection, table), `${step.label}: ${table}`).toBe(await contents(connection, 'by_rows'));
      }
    }
    // Every step wrote what it should have: the ways agree on a mirror, not on nothing.
    for (const [table] of variants)
      expect(await tableDifferences(connection, table, 'by_rows', '* EXCLUDE (_version_seq)')).toEqual([0, 0]);
    const amounts = await connection.runAndReadAll(`SELECT id, amount, _deleted_at IS NULL AS live FROM by_ids ORDER BY id`);
    expect(amounts.getRowsJson()).toEqual([
      [ID(1), 10, true],
      [ID(2), 21, true],
      [ID(3), 32, true],
      [ID(4), 40, true],
      [ID(5), 55, true],
    ]);
  });

  it('finds a stored id the encoder could not list (it holds a newline) from the rows themselves: the row is replaced, not doubled', async () => {
    const { connection } = opened;
    const odd = (updated_at: string, amount: number): ServiceRecord => ({ ...deal(1, updated_at, amount), id: 'line\nbreak' });
    for (const [i, record] of [odd(T1, 10), odd(T2, 11)].entries()) {
      const lines = encodeRecords([record], plan, '2026-05-01T00:00:00Z');
      expect(lines.ids).toBeUndefined();
      const result = await upsertRecords(connection, 'by_ids', plan, [], lines, { lookup: 'ids' });
      // The first found the table empty, which only the lookup by ids looks for.
      expect(result).toEqual({ written: 1, changed: 1, stored: i, ...(i === 0 ? { emptyBefore: true } : {}) });
    }
    const rows = await connection.runAndReadAll(`SELECT id, amount FROM by_ids`);
    expect(rows.getRowsJson()).toEqual([['line\nbreak', 11]]);
  });

  it('looks up ids first after a batch that found none stored, and the stored rows at once after one that found some', () => {
    expect(nextLookup(undefined)).toBe('ids');
    expect(nextLookup({ stored: 0 })).toBe('ids');
    expect(nextLookup({ stored: 1 })).toBe('rows');
    expect(nextLookup({ stored: 2000 })).toBe('rows');
  });
});
