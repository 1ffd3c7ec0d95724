import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assertHolds, connectionQuery, type Query } from '../../devtools/mirror-check.js';

let instance: DuckDBInstance;
let query: Query;

beforeEach(async () => {
  instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  query = connectionQuery(connection);
  // VARCHAR: a JSON column refuses such text on insert, where the fault overwrote it after.
  await connection.run(`CREATE TABLE deals (id VARCHAR, _properties VARCHAR)`);
  await connection.run(`INSERT INTO deals VALUES ('D1', '{"name":"one"}'), ('D2', '{"name":"two\\nlines"}'), ('D3', NULL)`);
});

afterEach(() => instance.closeSync());

describe("the bench's check of what a sync left", () => {
  it('passes a table holding its rows, properties whole', async () => {
    await expect(assertHolds(query, { deals: 3 }, 'the sync')).resolves.toBeUndefined();
  });

  it('fails a table holding fewer rows than it was given', async () => {
    await expect(assertHolds(query, { deals: 4 }, 'the sync')).rejects.toThrow('deals 3 rows of 3 ids, not 4 of 4');
  });

  it('fails a table whose properties hold bytes the encoder never wrote', async () => {
    await query(`INSERT INTO deals VALUES ('D4', '{"name":"o' || chr(1) || chr(0) || 'ne"}'), ('D5', '{"name":"fi')`);
    await expect(assertHolds(query, { deals: 5 }, 'the sync')).rejects.toThrow(
      'deals 2 rows whose properties are not the JSON text written',
    );
  });
});
