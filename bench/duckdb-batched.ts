/**
 * DuckDB on its own, as the floor under our upsert path: the very rows a sync wrote, loaded again batch by batch
 * with DuckDB's plain `INSERT … SELECT * FROM read_json(…)`, each batch committed, optionally with each row also
 * into a history table (the two writes every version costs us). No mapping, no stage, no join.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { quoteIdentifier, quoteLiteral } from '../src/warehouse/identifiers.js';

const q = quoteIdentifier;
const lit = quoteLiteral;

export interface BatchedTable {
  table: string;
  columns: Array<{ name: string; type: string }>;
  /** NDJSON files of at most the batch size each, in load order. */
  batches: string[];
}

/** What bench/duckdb-batched-child loads, and how. */
export interface DuckdbBatchedSpec {
  path: string;
  memoryLimit: string;
  checkpointThreshold: string;
  tables: BatchedTable[];
}

/**
 * Export `table` as NDJSON files under `dir`, in its stored order: `batchRows` rows each, or the given sizes in turn
 * (DuckDB writes them: nothing held in JS).
 */
export async function exportBatches(
  connection: DuckDBConnection,
  table: string,
  dir: string,
  batchRows: number | readonly number[],
): Promise<BatchedTable> {
  const described = (await connection.runAndReadAll(`DESCRIBE ${q(table)}`)).getRowObjectsJson() as Array<{
    column_name: string;
    column_type: string;
  }>;
  await mkdir(dir, { recursive: true });
  // Numbered once, then cut (COPY … FORMAT json has no PARTITION_BY).
  const numbered = q(`_bench_${table}`);
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE ${numbered} AS SELECT *, row_number() OVER (ORDER BY rowid) - 1 AS _row FROM ${q(table)}`,
  );
  const total = Number((await connection.runAndReadAll(`SELECT count(*) AS n FROM ${numbered}`)).getRowObjects()[0]!.n);
  const sizes = typeof batchRows === 'number' ? Array.from({ length: Math.ceil(total / batchRows) }, () => batchRows) : batchRows;
  const batches: string[] = [];
  let start = 0;
  for (const [i, size] of sizes.entries()) {
    if (start >= total) break;
    const file = join(dir, `${table}.${i}.ndjson`);
    await connection.run(
      `COPY (SELECT * EXCLUDE (_row) FROM ${numbered} WHERE _row >= ${start} AND _row < ${start + size}) TO ${lit(file)} (FORMAT json)`,
    );
    batches.push(file);
    start += size;
  }
  await connection.run(`DROP TABLE ${numbered}`);
  return { table, columns: described.map((c) => ({ name: c.column_name, type: c.column_type })), batches };
}

/** Create each table (and `<table>_history`) empty, as the warehouse shapes them. */
export async function createBatchedTables(connection: DuckDBConnection, tables: readonly BatchedTable[]): Promise<void> {
  for (const t of tables) {
    await connection.run(`CREATE TABLE ${q(t.table)} (${t.columns.map((c) => `${q(c.name)} ${c.type}`).join(', ')})`);
    await connection.run(
      `CREATE TABLE ${q(`${t.table}_history`)} (id VARCHAR NOT NULL, updated_at TIMESTAMPTZ NOT NULL, properties JSON, observed_at TIMESTAMPTZ)`,
    );
  }
}

/**
 * Load every batch, one committed transaction each, taking the tables in turn as concurrent walks would. With
 * `withHistory`, each row also goes into `<table>_history`, read from the same file. With `replace`, the stored rows
 * of the batch's ids are deleted first in the same transaction: DuckDB's own upsert of a table without a key.
 */
export async function loadBatched(
  connection: DuckDBConnection,
  tables: readonly BatchedTable[],
  withHistory: boolean,
  replace = false,
): Promise<void> {
  const rounds = Math.max(0, ...tables.map((t) => t.batches.length));
  for (let i = 0; i < rounds; i += 1) {
    for (const t of tables) {
      const file = t.batches[i];
      if (file === undefined) continue;
      const types = `{${t.columns.map((c) => `${lit(c.name)}: ${lit(c.type)}`).join(', ')}}`;
      const read = `read_json(${lit(file)}, format = 'newline_delimited', columns = ${types})`;
      const history = withHistory
        ? [`INSERT INTO ${q(`${t.table}_history`)} SELECT id, updated_at, _properties, _synced_at FROM ${read}`]
        : [];
      const replaced = replace ? [`DELETE FROM ${q(t.table)} WHERE id IN (SELECT id FROM ${read})`] : [];
      await connection.run(['BEGIN', ...replaced, `INSERT INTO ${q(t.table)} SELECT * FROM ${read}`, ...history, 'COMMIT'].join(';\n'));
    }
  }
}
