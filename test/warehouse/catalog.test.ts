import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { tableColumns, tableColumnTypes } from '../../src/warehouse/catalog.js';
import { inTransaction } from '../../src/warehouse/connection.js';

describe('catalog: what the main schema holds', () => {
  it('gives a table’s columns in order with the types duckdb_columns names, so a rebuild recreates each type exactly', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      await connection.run(
        `CREATE TABLE deals (id VARCHAR, "Amount" DOUBLE, closed_at TIMESTAMPTZ, selections STRUCT("value" VARCHAR, "level" BIGINT)[], _properties JSON)`,
      );
      const catalog = await connection.runAndReadAll(
        `SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'deals' ORDER BY column_index`,
      );
      expect(await tableColumnTypes(connection, 'deals')).toEqual(
        catalog.getRows().map(([name, type]) => ({ columnName: String(name), sqlType: String(type) })),
      );
      expect(await tableColumns(connection, 'deals')).toEqual(['id', 'Amount', 'closed_at', 'selections', '_properties']);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });

  it('is null for a missing table and for a view, and asking leaves the transaction it runs in whole', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      await connection.run(`CREATE TABLE deals (id VARCHAR); CREATE VIEW deals_view AS SELECT * FROM deals`);
      await inTransaction(connection, async () => {
        expect(await tableColumns(connection, 'companies')).toBeNull();
        expect(await tableColumns(connection, 'deals_view')).toBeNull();
        await connection.run(`INSERT INTO deals VALUES ('a')`);
      });
      const rows = await connection.runAndReadAll(`SELECT count(*)::INTEGER FROM deals`);
      expect(rows.getRows()).toEqual([[1]]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });
});
