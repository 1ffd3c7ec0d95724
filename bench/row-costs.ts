/**
 * What a first load's rows cost, piece by piece, on this machine: the main thread's parse of a page's bytes and
 * its encoding of the records (µs a record), and DuckDB's side of committing them (`upsertRecords` alone, at the
 * writer's settings, each batch looked up as the warehouse would) in batches of several sizes, for a first load
 * and for an upsert replacing every row; then, in batches of `STATEMENT_BATCH_ROWS`, the time of each statement of
 * those commits beside each of DuckDB's own batches with history (the load bench's baseline); with
 * `--hold-checkpoints`, those two at a threshold no commit reaches, each phase's WAL then checkpointed once and timed;
 * then, over what that upsert left, batches of records drawn at random from the whole table and changed again (an
 * incremental sync, whose stored rows lie scattered), statement by statement.
 * `npm run bench:rows -- [--rows N] [--sizes A,B,…] [--hold-checkpoints]`.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { ServiceRecord } from '../src/core/types.js';
import { parseJsonBytes } from '../src/api/json-bytes.js';
import { openWarehouse } from '../src/warehouse/index.js';
import { CHECKPOINT_THRESHOLD, openWriterDatabase, WRITER_SETTINGS } from '../src/warehouse/connection.js';
import { automaticMemoryLimit } from '../src/warehouse/memory-limit.js';
import { encodeRecords } from '../src/warehouse/rows.js';
import { planFromAssignments, readAssignments } from '../src/warehouse/schema.js';
import { nextLookup, upsertRecords, type UpsertResult } from '../src/warehouse/upsert.js';
import { PAGE_RECORDS, servicePages, touched } from './load-speed.js';
import { createBatchedTables, exportBatches, loadBatched } from './duckdb-batched.js';

const SYNCED_AT = '2026-05-01T00:00:00Z';

const USAGE = 'usage: row-costs [--rows N] [--sizes A,B,…] [--hold-checkpoints] (N a positive integer; sizes whole pages of 200 rows)';
const usageError = (why: string): never => {
  process.stderr.write(`${USAGE}; ${why}\n`);
  process.exit(2);
};
const args = (() => {
  try {
    return parseArgs({
      options: {
        rows: { type: 'string', default: '200000' },
        sizes: { type: 'string', default: '20000,65600,200000' },
        'hold-checkpoints': { type: 'boolean', default: false },
      },
    }).values;
  } catch (error) {
    return usageError(error instanceof Error ? error.message : String(error));
  }
})();
const rows = Number(args.rows);
/**
 * `--sizes`: the batch sizes DuckDB's side is timed at, whole pages each: by default 20,000, a batch grown to about
 * two row groups (`grownBatchRows`), and all rows at once. The first is also timed statement by statement.
 */
const BATCH_SIZES = args.sizes.split(',').map(Number);
if (!Number.isInteger(rows) || rows <= 0 || BATCH_SIZES.some((size) => !Number.isInteger(size) || size <= 0 || size % PAGE_RECORDS !== 0)) {
  usageError(`got --rows ${args.rows} --sizes ${args.sizes}`);
}
/** The batch size whose commits are timed statement by statement. */
const STATEMENT_BATCH_ROWS = BATCH_SIZES[0]!;
/** The scattered upsert: this many batches of `SCATTERED_BATCH_ROWS` records drawn at random (the walk's first batch size). */
const SCATTERED_BATCHES = 10;
const SCATTERED_BATCH_ROWS = 2000;
/**
 * The statement-by-statement files' checkpoint threshold: the writer's, or with `--hold-checkpoints` one no commit
 * reaches, so a COMMIT's own time and the checkpoints it would trigger are told apart (`checkpointHeld`).
 */
const STATEMENT_THRESHOLD = args['hold-checkpoints'] ? '100GB' : CHECKPOINT_THRESHOLD;

// Page bytes, as they come off the socket, and the same records touched: the load bench's own.
const { pages, touchedPages, definitions } = servicePages(rows);

const dir = await mkdtemp(join(tmpdir(), 'salesync-bench-row-costs-'));
const memoryLimit = automaticMemoryLimit(0);
try {
  /** A fresh warehouse file holding the deals table (empty) and its plan. */
  const freshTable = async (name: string, threshold = CHECKPOINT_THRESHOLD) => {
    const path = join(dir, `${name}.duckdb`);
    const warehouse = openWarehouse({ path, logger: pino({ level: 'silent' }) });
    await warehouse.ensureSchema();
    await warehouse.applyPropertyDefinitions('deals', definitions);
    await warehouse.close();
    const db = await openWriterDatabase(path, { ...WRITER_SETTINGS, memory_limit: memoryLimit });
    // As the warehouse's writer sets it: at DuckDB's default (16 MB) each batch below a row group was written twice,
    // to the WAL and again at a checkpoint, and commit size seemed to bound a first load.
    await db.connection.run(`SET checkpoint_threshold = '${threshold}'`);
    // `lastBatch`: what the file's last batch found stored, which chooses how the next one looks (`nextLookup`).
    return {
      db,
      plan: planFromAssignments(await readAssignments(db.connection, 'deals')),
      lastBatch: undefined as UpsertResult | undefined,
    };
  };

  /**
   * `connection`'s scripts run a statement at a time, each statement's time added under its first three words
   * (`INSERT INTO "deals"`, `COMMIT`): where a commit's time goes. Every read goes through `run`.
   */
  const timeStatements = (connection: DuckDBConnection): Map<string, number> => {
    const times = new Map<string, number>();
    const run = connection.run.bind(connection);
    connection.run = async (sql, values, types) => {
      if (values !== undefined) return run(sql, values, types);
      let last: Awaited<ReturnType<typeof run>> | undefined;
      // Scripts join their statements with ';\n' (upsert.ts, duckdb-batched.ts).
      for (const statement of sql.split(';\n')) {
        const started = performance.now();
        last = await run(statement);
        const kind = statement.trim().split(/\s+/).slice(0, 3).join(' ');
        times.set(kind, (times.get(kind) ?? 0) + performance.now() - started);
      }
      return last!;
    };
    return times;
  };
  /** With checkpoints held: the WAL a phase left, checkpointed once and timed (not counted among its statements). */
  const checkpointHeld = async (connection: DuckDBConnection, path: string) => {
    if (STATEMENT_THRESHOLD === CHECKPOINT_THRESHOLD) return;
    const walBytes = await stat(`${path}.wal`).then(
      (s) => s.size,
      () => 0,
    );
    const started = performance.now();
    await connection.run('CHECKPOINT');
    const seconds = (performance.now() - started) / 1000;
    process.stdout.write(`  then its WAL of ${(walBytes / 2 ** 20).toFixed(0)} MB, checkpointed in ${seconds.toFixed(2)} s\n`);
  };
  const printStatements = (what: string, times: ReadonlyMap<string, number>) => {
    const total = [...times.values()].reduce((a, b) => a + b, 0);
    process.stdout.write(`${what}, statement by statement (${(total / 1000).toFixed(2)} s):\n`);
    for (const [kind, ms] of [...times].sort((a, b) => b[1] - a[1])) {
      if (ms >= 1) process.stdout.write(`  ${(ms / 1000).toFixed(2).padStart(6)} s  ${kind}\n`);
    }
  };

  /**
   * `SCATTERED_BATCHES` batches of records drawn at random (a seeded shuffle) from `from`'s, each changed again
   * (`touched`), as list pages, every batch in `updated_at` order as a walk reads it.
   */
  const scatteredPages = (from: readonly Buffer[]): Buffer[] => {
    const records = touched(from.flatMap((page) => (parseJsonBytes(page) as { results: ServiceRecord[] }).results));
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = records.length - 1; i > 0; i -= 1) {
      const j = Math.floor(random() * (i + 1));
      [records[i], records[j]] = [records[j]!, records[i]!];
    }
    const drawn: ServiceRecord[] = [];
    for (let b = 0; b < SCATTERED_BATCHES; b += 1) {
      const batch = records.slice(b * SCATTERED_BATCH_ROWS, (b + 1) * SCATTERED_BATCH_ROWS);
      drawn.push(...batch.sort((x, y) => (x.updated_at < y.updated_at ? -1 : x.updated_at > y.updated_at ? 1 : 0)));
    }
    return Array.from({ length: Math.ceil(drawn.length / PAGE_RECORDS) }, (_, i) =>
      Buffer.from(JSON.stringify({ results: drawn.slice(i * PAGE_RECORDS, (i + 1) * PAGE_RECORDS) })),
    );
  };

  // The main thread's part: each batch's pages parsed, then its records encoded.
  const { db: planDb, plan } = await freshTable('plan');
  planDb.connection.closeSync();
  planDb.instance.closeSync();
  let parseMs = 0;
  let encodeMs = 0;
  let bytes = 0;
  const batchPages = BATCH_SIZES[0]! / PAGE_RECORDS;
  for (let i = 0; i < pages.length; i += batchPages) {
    let started = performance.now();
    const batch = pages.slice(i, i + batchPages).flatMap((page) => (parseJsonBytes(page) as { results: ServiceRecord[] }).results);
    parseMs += performance.now() - started;
    started = performance.now();
    for (const chunk of encodeRecords(batch, plan, SYNCED_AT).bytes()) bytes += chunk.length;
    encodeMs += performance.now() - started;
  }
  const perRecord = (ms: number) => ((ms * 1000) / rows).toFixed(1);
  process.stdout.write(
    `${rows} deals (${plan.length} property columns, ${Math.round(bytes / rows)} bytes of NDJSON a record): parse ${perRecord(parseMs)} µs a record, encode ${perRecord(encodeMs)} µs\n`,
  );

  // DuckDB's part: the rows encoded beforehand, each batch committed as a first load commits it; then the same
  // batches touched, each replacing its stored rows and closing their versions, as an upsert commits them.
  const encoded = (from: readonly Buffer[], size: number, tablePlan: typeof plan) => {
    const batches: ReturnType<typeof encodeRecords>[] = [];
    const perBatch = size / PAGE_RECORDS;
    for (let i = 0; i < from.length; i += perBatch) {
      const batch = from.slice(i, i + perBatch).flatMap((page) => (parseJsonBytes(page) as { results: ServiceRecord[] }).results);
      batches.push(encodeRecords(batch, tablePlan, SYNCED_AT));
    }
    return batches;
  };
  /**
   * `from`'s rows committed into `table`'s file in batches of `size`, each as a walk commits it, looked up as the
   * warehouse looks it up: `storedNone` where its id filter knows the file holds none of them (a first load);
   * seconds.
   */
  const commit = async (table: Awaited<ReturnType<typeof freshTable>>, from: readonly Buffer[], size: number, storedNone: boolean) => {
    const batches = encoded(from, size, table.plan);
    const started = performance.now();
    for (const lines of batches) {
      const found = await upsertRecords(table.db.connection, 'deals', table.plan, [], lines, {
        lookup: nextLookup(table.lastBatch),
        storedNone,
        versions: { source: 'incremental', runId: null, committedAt: SYNCED_AT, observedAt: SYNCED_AT },
        prelude: ['BEGIN TRANSACTION'],
        epilogue: ['COMMIT'],
      });
      table.lastBatch = found;
    }
    return (performance.now() - started) / 1000;
  };
  for (const size of BATCH_SIZES) {
    const table = await freshTable(`batches-${size}`);
    const { db } = table;
    try {
      for (const [what, from] of [
        ['a first load', pages],
        ['an upsert', touchedPages],
      ] as const) {
        const seconds = await commit(table, from, size, from === pages);
        process.stdout.write(
          `DuckDB's side of ${what} in batches of ${size}: ${(rows / seconds / 1000).toFixed(1)}k rows/s (${seconds.toFixed(2)} s, one thread, ${memoryLimit})\n`,
        );
      }
    } finally {
      db.connection.closeSync();
      db.instance.closeSync();
    }
  }

  // Statement by statement: ours, then DuckDB's own batches with history of the very rows ours wrote (exported by a
  // reader at DuckDB's defaults: the export numbers every row at once), first loaded, then replaced.
  const ours = await freshTable('statements', STATEMENT_THRESHOLD);
  const path = join(dir, 'statements.duckdb');
  try {
    const times = timeStatements(ours.db.connection);
    for (const [what, from] of [
      ['our first load', pages],
      ['our upsert', touchedPages],
    ] as const) {
      await commit(ours, from, STATEMENT_BATCH_ROWS, from === pages);
      printStatements(`${what} in batches of ${STATEMENT_BATCH_ROWS}`, times);
      await checkpointHeld(ours.db.connection, path);
      times.clear();
    }
  } finally {
    ours.db.connection.closeSync();
    ours.db.instance.closeSync();
  }
  const reader = await openWriterDatabase(path, {});
  const exported = await exportBatches(reader.connection, 'deals', join(dir, 'statement-batches'), STATEMENT_BATCH_ROWS).finally(() => {
    reader.connection.closeSync();
    reader.instance.closeSync();
  });
  const ownPath = join(dir, 'duckdb-own.duckdb');
  const own = await openWriterDatabase(ownPath, { ...WRITER_SETTINGS, memory_limit: memoryLimit });
  try {
    await own.connection.run(`SET checkpoint_threshold = '${STATEMENT_THRESHOLD}'`);
    await createBatchedTables(own.connection, [exported]);
    const times = timeStatements(own.connection);
    for (const [what, replace] of [
      ["DuckDB's own first load", false],
      ["DuckDB's own upsert", true],
    ] as const) {
      await loadBatched(own.connection, [exported], true, replace);
      printStatements(`${what} in batches of ${STATEMENT_BATCH_ROWS}, with history`, times);
      await checkpointHeld(own.connection, ownPath);
      times.clear();
    }
  } finally {
    own.connection.closeSync();
    own.instance.closeSync();
  }

  // Over what our upsert left (after DuckDB's own batches were exported from it): each scattered batch's stored rows
  // lie all over the table, so no join on them is pruned to a range of rowids.
  const again = await openWriterDatabase(path, { ...WRITER_SETTINGS, memory_limit: memoryLimit });
  try {
    await again.connection.run(`SET checkpoint_threshold = '${CHECKPOINT_THRESHOLD}'`);
    const table = { db: again, plan: planFromAssignments(await readAssignments(again.connection, 'deals')), lastBatch: ours.lastBatch };
    const times = timeStatements(again.connection);
    const seconds = await commit(table, scatteredPages(touchedPages), SCATTERED_BATCH_ROWS, false);
    const rowsPerSec = (SCATTERED_BATCHES * SCATTERED_BATCH_ROWS) / seconds;
    printStatements(
      `our upsert of ${SCATTERED_BATCHES} batches of ${SCATTERED_BATCH_ROWS} records drawn at random from the ${rows} stored, ${(rowsPerSec / 1000).toFixed(1)}k rows/s`,
      times,
    );
  } finally {
    again.connection.closeSync();
    again.instance.closeSync();
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
