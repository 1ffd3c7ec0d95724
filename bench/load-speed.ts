import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { pino } from 'pino';
import type { PropertyDefinition, ServiceRecord } from '../src/core/types.js';
import { microsToIso, parseInstantMicros } from '../src/core/time.js';
import { createSimulator } from '../src/simulator/index.js';
import { openWarehouse } from '../src/warehouse/index.js';
import { CHECKPOINT_THRESHOLD } from '../src/warehouse/connection.js';
import { quoteLiteral } from '../src/warehouse/identifiers.js';
import { createBatchedTables, exportBatches, loadBatched, type BatchedTable } from './duckdb-batched.js';
import { CommitQueue } from '../src/sync/commit-queue.js';

export interface LoadSpeedResult {
  rows: number;
  batchRows: number;
  /** Rows/s of DuckDB's own `INSERT INTO … SELECT * FROM read_json(…)` of the same rows into a fresh table. */
  duckdbRowsPerSec: number;
  /**
   * Where the gap comes from, not the goal's baseline: the same statement per batch of `batchRows`, each batch
   * committed (what streaming with a checkpoint per batch costs DuckDB itself), and that plus each row into a
   * history table (the second write every version costs).
   */
  duckdbBatchedRowsPerSec: number;
  duckdbBatchedWithHistoryRowsPerSec: number;
  firstLoadRowsPerSec: number;
  upsertRowsPerSec: number;
  firstLoadRatio: number;
  upsertRatio: number;
}

const lit = quoteLiteral;

/** Every record a microsecond newer, with one value changed: an upsert that must replace every row. */
function touched(records: ServiceRecord[]): ServiceRecord[] {
  return records.map((r) => ({
    ...r,
    updated_at: microsToIso(parseInstantMicros(r.updated_at)! + 1n),
    properties: { ...r.properties, amount: typeof r.properties.amount === 'number' ? r.properties.amount + 1 : 1 },
  }));
}

/**
 * Our upsert path (the warehouse's commitBatch, batch by batch, each in its own transaction with a checkpoint,
 * two in flight as a walk commits, at the sync's default batch size) against DuckDB's own bulk load of the very same rows
 * into a fresh table: the physical limit of the file.
 */
export async function benchLoadSpeed(options: {
  rows: number;
  /** The sync's SALESYNC_FLUSH_ROWS. */
  batchRows: number;
  /** The warehouse settings a sync would open the file with (SALESYNC_DUCKDB_MEMORY, SALESYNC_LINGER). */
  memoryLimit: string;
  lingerMs: number;
}): Promise<LoadSpeedResult> {
  const dir = await mkdtemp(join(tmpdir(), 'salesync-bench-load-'));
  try {
    const sim = createSimulator({
      seed: 42,
      size: { deals: options.rows, companies: 20, contacts: 20, meetingLogs: 1, contactActivities: 1, users: 5 },
    });
    const truth = sim.admin.truth();
    const records = truth.records.deals as ServiceRecord[];
    const definitions = truth.properties.deals as PropertyDefinition[];
    const path = join(dir, 'warehouse.duckdb');
    // Opened as a sync opens it (the file lingers between commits, the same memory limit).
    const warehouse = openWarehouse({
      path,
      logger: pino({ level: 'silent' }),
      lingerMs: options.lingerMs,
      memoryLimit: options.memoryLimit,
    });
    await warehouse.ensureSchema();
    await warehouse.applyPropertyDefinitions('deals', definitions);

    const commitAll = async (rows: ServiceRecord[]): Promise<number> => {
      const started = performance.now();
      // As a walk commits: the next batch is prepared (and encoded) while the ones before it are written.
      const commits = new CommitQueue();
      for (let i = 0; i < rows.length; i += options.batchRows) {
        await commits.push(() => {
          const batch = warehouse.prepareBatch('deals', {
            records: rows.slice(i, i + options.batchRows),
            checkpoint: { cursor: `bench-${i}`, updatedAfter: null, startedAt: '2026-01-01T00:00:00Z', mode: 'full' },
          });
          return async () => void (await warehouse.commitBatch('deals', batch));
        });
      }
      await commits.drain();
      // Until the file is closed: DuckDB's own load below is timed to its checkpoint too.
      await warehouse.close();
      return rows.length / ((performance.now() - started) / 1000);
    };
    let firstLoadRowsPerSec: number;
    let upsertRowsPerSec: number;
    try {
      firstLoadRowsPerSec = await commitAll(records);
      upsertRowsPerSec = await commitAll(touched(records));
    } finally {
      // After a failed commit too: a file left lingering open would still be writing while the directory goes.
      await warehouse.close();
    }

    // The same rows, as DuckDB itself would bulk-load them: NDJSON of the table (whole, and cut into the sync's
    // batches), read back with its types.
    const ndjson = join(dir, 'deals.ndjson');
    const source = await DuckDBInstance.create(path);
    const sourceConnection = await source.connect();
    await sourceConnection.run(`COPY deals TO ${lit(ndjson)} (FORMAT json)`);
    const batches = await exportBatches(sourceConnection, 'deals', join(dir, 'batches'), options.batchRows);
    sourceConnection.closeSync();
    source.closeSync();

    // Timed from the first statement to the last checkpoint, in a fresh file: DuckDB's own defaults for the
    // one-shot load (the physical limit), the warehouse's memory limit and checkpoint threshold for the batches.
    const load = async (
      name: string,
      table: BatchedTable,
      withHistory: boolean,
      settings: { memoryLimit: string } | null,
    ): Promise<number> => {
      const instance = await DuckDBInstance.create(join(dir, name), settings ? { memory_limit: settings.memoryLimit } : {});
      const c = await instance.connect();
      if (settings) await c.run(`SET checkpoint_threshold = '${CHECKPOINT_THRESHOLD}'`); // as the warehouse sets it
      await createBatchedTables(c, [table]);
      const t0 = performance.now();
      await loadBatched(c, [table], withHistory);
      await c.run('CHECKPOINT');
      const rowsPerSec = options.rows / ((performance.now() - t0) / 1000);
      c.closeSync();
      instance.closeSync();
      return rowsPerSec;
    };
    const warehouseSettings = { memoryLimit: options.memoryLimit };
    const duckdbRowsPerSec = await load('baseline.duckdb', { ...batches, batches: [ndjson] }, false, null);
    const duckdbBatchedRowsPerSec = await load('batched.duckdb', batches, false, warehouseSettings);
    const duckdbBatchedWithHistoryRowsPerSec = await load('batched-history.duckdb', batches, true, warehouseSettings);

    return {
      rows: options.rows,
      batchRows: options.batchRows,
      duckdbRowsPerSec,
      duckdbBatchedRowsPerSec,
      duckdbBatchedWithHistoryRowsPerSec,
      firstLoadRowsPerSec,
      upsertRowsPerSec,
      firstLoadRatio: firstLoadRowsPerSec / duckdbRowsPerSec,
      upsertRatio: upsertRowsPerSec / duckdbRowsPerSec,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
