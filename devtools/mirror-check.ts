/**
 * What a benchmarked sync left in its file, checked before its speed or memory is reported: a run that wrote less
 * than it was given reads as fast and as lean (an experiment whose batches wrote nothing read 50 % faster).
 */
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { quoteIdentifier } from '../src/warehouse/identifiers.js';
import { FingerprintBuilder, type Fingerprint } from './mirror-fingerprint.js';

/** Tables and the rows each must hold: a count (every row an id of its own), or rows over how many ids (history). */
export type ExpectedRows = Readonly<Record<string, number | { rows: number; ids: number }>>;

/** A way to read rows: a connection's, or a warehouse's `query`. */
export type Query = (sql: string) => Promise<ReadonlyArray<Record<string, unknown>>>;

/** Reads through `connection`. */
export const connectionQuery =
  (connection: DuckDBConnection): Query =>
  async (sql) =>
    (await connection.runAndReadAll(sql)).getRowObjects();

/**
 * Rows of `table` whose `_properties` are not valid JSON or hold a raw control character (JSON text escapes
 * them): bytes overwritten after the encoder wrote them (a DuckDB fault at low memory limits wrote into rows of
 * a large commit, docs/performance.md). 0 for a table without `_properties`.
 */
async function damagedRows(query: Query, table: string): Promise<number> {
  const [column] = await query(
    `SELECT count(*)::INTEGER AS n FROM duckdb_columns() WHERE table_name = '${table.replaceAll("'", "''")}' AND column_name = '_properties'`,
  );
  if (Number(column?.n) === 0) return 0;
  const [found] = await query(
    `SELECT count(*)::BIGINT AS n FROM ${quoteIdentifier(table)}
     WHERE _properties IS NOT NULL AND (NOT json_valid(_properties) OR regexp_matches(CAST(_properties AS VARCHAR), '[\\x00-\\x1f]'))`,
  );
  return Number(found?.n);
}

/** Throws unless each table holds exactly its expected rows and ids, their properties whole. */
export async function assertHolds(query: Query, expected: ExpectedRows, what: string): Promise<void> {
  const wrong: string[] = [];
  for (const [table, expectation] of Object.entries(expected)) {
    const { rows, ids } = typeof expectation === 'number' ? { rows: expectation, ids: expectation } : expectation;
    const [found] = await query(`SELECT count(*)::BIGINT AS n, count(DISTINCT id)::BIGINT AS ids FROM ${quoteIdentifier(table)}`);
    const [n, distinct] = [Number(found?.n), Number(found?.ids)];
    if (n !== rows || distinct !== ids) wrong.push(`${table} ${n} rows of ${distinct} ids, not ${rows} of ${ids}`);
    const damaged = await damagedRows(query, table);
    if (damaged > 0) wrong.push(`${table} ${damaged} rows whose properties are not the JSON text written`);
  }
  if (wrong.length > 0) throw new Error(`${what} left ${wrong.join('; ')}: its figures mean nothing`);
}

/** Rows read at a time for a fingerprint: a million records are never held at once. */
const FINGERPRINT_CHUNK = 50_000;

/** The fingerprint of what `table` holds of the service's records: its rows not marked deleted, id and properties. */
export async function tableFingerprint(query: Query, table: string): Promise<Fingerprint> {
  const t = quoteIdentifier(table);
  const [range] = await query(`SELECT coalesce(max(rowid), -1)::BIGINT AS last FROM ${t}`);
  const builder = new FingerprintBuilder();
  for (let from = 0; from <= Number(range?.last); from += FINGERPRINT_CHUNK) {
    const rows = await query(
      `SELECT id, CAST(_properties AS VARCHAR) AS properties FROM ${t}
       WHERE _deleted_at IS NULL AND rowid >= ${from} AND rowid < ${from + FINGERPRINT_CHUNK}`,
    );
    for (const row of rows) builder.add(String(row.id), row.properties === null ? null : JSON.parse(String(row.properties)));
  }
  return builder.result();
}

/** Throws unless each table's fingerprint is the truth's: every record there, with the service's properties. */
export async function assertMatches(query: Query, truth: Readonly<Record<string, Fingerprint>>, what: string): Promise<void> {
  const wrong: string[] = [];
  for (const [table, expected] of Object.entries(truth)) {
    const found = await tableFingerprint(query, table);
    if (found.records !== expected.records || found.sum !== expected.sum) {
      wrong.push(`${table} ${found.records} records (fingerprint ${found.sum}), the service ${expected.records} (${expected.sum})`);
    }
  }
  if (wrong.length > 0) throw new Error(`${what} left ${wrong.join('; ')}: the file is not the service's mirror`);
}

/** `assertHolds` on the file at `path`, opened on its own and closed again; with `truth`, `assertMatches` too. */
export async function assertFileHolds(
  path: string,
  expected: ExpectedRows,
  what: string,
  truth?: Readonly<Record<string, Fingerprint>>,
): Promise<void> {
  const instance = await DuckDBInstance.create(path);
  try {
    const connection = await instance.connect();
    try {
      await assertHolds(connectionQuery(connection), expected, what);
      if (truth !== undefined) await assertMatches(connectionQuery(connection), truth, what);
    } finally {
      connection.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}
