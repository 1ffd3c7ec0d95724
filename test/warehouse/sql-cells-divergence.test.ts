/**
 * Why a first load that hands DuckDB the page bodies cannot take DuckDB's own JSON and casts as they are
 * (docs/performance.md, 2026-12-05): they part from `JSON.stringify` and `toColumnValue`, which every other write
 * uses. If DuckDB ever agrees, these fail, and the doc's list can shrink.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toColumnValue } from '../../src/warehouse/rows.js';
import type { SqlType } from '../../src/warehouse/column-types.js';

let instance: DuckDBInstance;
let read: (sql: string, params?: string[]) => Promise<Record<string, unknown>>;

beforeAll(async () => {
  instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  read = async (sql, params = []) => (await connection.runAndReadAll(sql, params)).getRowObjectsJson()[0] as Record<string, unknown>;
});
afterAll(() => instance.closeSync());

describe("DuckDB's JSON and casts against ours", () => {
  it('read_json writes a JSON column again: escapes decode as JSON.parse decodes them, numbers keep other forms', async () => {
    const properties = '{"n1":100.0,"n2":1E2,"n3":1e21,"n4":-0.0,"n5":12345678901234567890,"s":"\\u3042\\/"}';
    const dir = await mkdtemp(join(tmpdir(), 'salesync-divergence-'));
    try {
      const page = join(dir, 'page.json');
      await writeFile(page, `{"results":[{"id":"a","properties":${properties}}]}`);
      const { text } = await read(
        `SELECT CAST(r.properties AS VARCHAR) AS text
         FROM (SELECT unnest(results) AS r FROM read_json($1, columns = {results: 'STRUCT(id VARCHAR, properties JSON)[]'}))`,
        [page],
      );
      expect(text).toBe('{"n1":100.0,"n2":100.0,"n3":1e21,"n4":-0.0,"n5":12345678901234567890,"s":"あ/"}');
      expect(JSON.stringify(JSON.parse(properties))).toBe('{"n1":100,"n2":100,"n3":1e+21,"n4":0,"n5":12345678901234567000,"s":"あ/"}');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each<[string, SqlType]>([
    ['inf', 'DOUBLE'],
    ['NaN', 'DOUBLE'],
    ['1_000', 'DOUBLE'],
    ['\u30001\u3000', 'DOUBLE'],
    ['yes', 'BOOLEAN'],
    ['t', 'BOOLEAN'],
    ['1', 'BOOLEAN'],
    ['TRUE ', 'BOOLEAN'],
    ['2025-1-5', 'DATE'],
    ['inf', 'DATE'],
    ['2025-01-05T00:00:00Z', 'DATE'],
  ])('TRY_CAST(%j AS %s) and toColumnValue disagree', async (text, sqlType) => {
    const { cell } = await read(`SELECT CAST(TRY_CAST($1 AS ${sqlType}) AS VARCHAR) AS cell`, [text]);
    const ours = toColumnValue(text, sqlType);
    expect(cell === null ? null : String(cell)).not.toBe(ours === null ? null : String(ours));
  });
});
