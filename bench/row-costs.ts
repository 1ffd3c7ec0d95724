/**
 * What a first load's rows cost, piece by piece, on this machine: the main thread's parse of a page's bytes and
 * its encoding of the records (µs a record), and DuckDB's side of committing them (`upsertRecords` alone, at the
 * writer's settings) in batches of several sizes, for a first load and for an upsert replacing every row.
 * `npm run bench:rows -- [--rows N]`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { ServiceRecord } from '../src/core/types.js';
import { parseJsonBytes } from '../src/api/json-bytes.js';
import { openWarehouse } from '../src/warehouse/index.js';
import { CHECKPOINT_THRESHOLD, openWriterDatabase, WRITER_SETTINGS } from '../src/warehouse/connection.js';
import { automaticMemoryLimit } from '../src/warehouse/memory-limit.js';
import { encodeRecords } from '../src/warehouse/rows.js';
import { planFromAssignments, readAssignments } from '../src/warehouse/schema.js';
import { upsertRecords } from '../src/warehouse/upsert.js';
import { PAGE_RECORDS, servicePages } from './load-speed.js';

const BATCH_SIZES = [20_000, 100_000, 200_000];
const SYNCED_AT = '2026-05-01T00:00:00Z';

const rowsFlag = process.argv.indexOf('--rows');
const rows = rowsFlag === -1 ? 200_000 : Number(process.argv[rowsFlag + 1]);
if (!Number.isInteger(rows) || rows <= 0) {
  process.stderr.write(`usage: row-costs [--rows N] (N a positive integer; got ${process.argv[rowsFlag + 1]})\n`);
  process.exit(2);
}

// Page bytes, as they come off the socket, and the same records touched: the load bench's own.
const { pages, touchedPages, definitions } = servicePages(rows);

const dir = await mkdtemp(join(tmpdir(), 'salesync-bench-row-costs-'));
const memoryLimit = automaticMemoryLimit(0);
try {
  /** A fresh warehouse file holding the deals table (empty) and its plan. */
  const freshTable = async (name: string) => {
    const path = join(dir, `${name}.duckdb`);
    const warehouse = openWarehouse({ path, logger: pino({ level: 'silent' }) });
    await warehouse.ensureSchema();
    await warehouse.applyPropertyDefinitions('deals', definitions);
    await warehouse.close();
    const db = await openWriterDatabase(path, { ...WRITER_SETTINGS, memory_limit: memoryLimit });
    // As the warehouse's writer sets it: at DuckDB's default (16 MB) each batch below a row group was written twice,
    // to the WAL and again at a checkpoint, and commit size seemed to bound a first load.
    await db.connection.run(`SET checkpoint_threshold = '${CHECKPOINT_THRESHOLD}'`);
    return { db, plan: planFromAssignments(await readAssignments(db.connection, 'deals')) };
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
  for (const size of BATCH_SIZES) {
    const { db, plan: tablePlan } = await freshTable(`batches-${size}`);
    try {
      const commit = async (from: readonly Buffer[]) => {
        const batches = encoded(from, size, tablePlan);
        const started = performance.now();
        for (const lines of batches) {
          await upsertRecords(db.connection, 'deals', tablePlan, [], lines, {
            lookup: 'ids',
            versions: { source: 'incremental', runId: null, committedAt: SYNCED_AT, observedAt: SYNCED_AT },
            prelude: ['BEGIN TRANSACTION'],
            epilogue: ['COMMIT'],
          });
        }
        return (performance.now() - started) / 1000;
      };
      for (const [what, from] of [
        ['a first load', pages],
        ['an upsert', touchedPages],
      ] as const) {
        const seconds = await commit(from);
        process.stdout.write(
          `DuckDB's side of ${what} in batches of ${size}: ${(rows / seconds / 1000).toFixed(1)}k rows/s (${seconds.toFixed(2)} s, one thread, ${memoryLimit})\n`,
        );
      }
    } finally {
      db.connection.closeSync();
      db.instance.closeSync();
    }
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
