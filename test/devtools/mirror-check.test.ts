import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assertHolds, assertMatches, connectionQuery, type Query } from '../../devtools/mirror-check.js';
import { fingerprintOf } from '../../devtools/mirror-fingerprint.js';

let instance: DuckDBInstance;
let query: Query;

beforeEach(async () => {
  instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  query = connectionQuery(connection);
  // VARCHAR: a JSON column refuses such text on insert, where the fault overwrote it after.
  await connection.run(`CREATE TABLE deals (id VARCHAR, _properties VARCHAR, _deleted_at TIMESTAMPTZ)`);
  await connection.run(
    `INSERT INTO deals VALUES ('D1', '{"name":"one","amount":1.5}', NULL), ('D2', '{"name":"two\\nlines"}', NULL), ('D3', NULL, NULL)`,
  );
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
    await query(`INSERT INTO deals VALUES ('D4', '{"name":"o' || chr(1) || chr(0) || 'ne"}', NULL), ('D5', '{"name":"fi', NULL)`);
    await expect(assertHolds(query, { deals: 5 }, 'the sync')).rejects.toThrow(
      'deals 2 rows whose properties are not the JSON text written',
    );
  });

  // The service's records, keys in another order than stored: the same record.
  const truth = () => ({
    deals: fingerprintOf([
      { id: 'D3', properties: null },
      { id: 'D2', properties: { name: 'two\nlines' } },
      { id: 'D1', properties: { amount: 1.5, name: 'one' } },
    ]),
  });

  it('matches the service when every record is there with its properties, in any order and key order', async () => {
    await expect(assertMatches(query, truth(), 'the sync')).resolves.toBeUndefined();
  });

  it('fails a file missing one property of one record, and one holding a record the service deleted', async () => {
    await query(`UPDATE deals SET _properties = '{"name":"one"}' WHERE id = 'D1'`);
    await expect(assertMatches(query, truth(), 'the sync')).rejects.toThrow("the file is not the service's mirror");
    await query(`UPDATE deals SET _properties = '{"name":"one","amount":1.5}' WHERE id = 'D1'`);
    await query(`INSERT INTO deals VALUES ('D9', '{}', NULL)`);
    await expect(assertMatches(query, truth(), 'the sync')).rejects.toThrow('deals 4 records');
    // Marked deleted, it is no record of the mirror's.
    await query(`UPDATE deals SET _deleted_at = now() WHERE id = 'D9'`);
    await expect(assertMatches(query, truth(), 'the sync')).resolves.toBeUndefined();
  });
});
