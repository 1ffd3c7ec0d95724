import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { pino } from 'pino';
import type { PropertyDefinition, ServiceRecord } from '../src/core/types.js';
import { microsToIso, parseInstantMicros } from '../src/core/time.js';
import { createSimulator } from '../src/simulator/index.js';
import { openWarehouse } from '../src/warehouse/index.js';
import { CHECKPOINT_THRESHOLD, openWriterDatabase, WRITER_SETTINGS } from '../src/warehouse/connection.js';
import { quoteLiteral } from '../src/warehouse/identifiers.js';
import { memoryLimitMb } from '../src/warehouse/memory-limit.js';
import { sqlTypeFor } from '../src/warehouse/column-types.js';
import { assertHolds, connectionQuery } from '../devtools/mirror-check.js';
import { createBatchedTables, exportBatches, loadBatched, type BatchedTable } from './duckdb-batched.js';
import type { ListPage, SalesApi } from '../src/api/types.js';
import { DEFAULT_CONFIG } from '../src/config.js';
import { syncSettings } from '../src/sync/environment.js';
import { walkPages } from '../src/sync/walk-pages.js';
import { trackProgress } from '../src/sync/progress.js';
import { parseJsonBytes as parseJson } from '../src/api/json-bytes.js';

interface DuckdbSettings {
  memoryLimit: string;
  /** @defaultValue DuckDB's own: every core */
  threads?: number;
}

/** Records per page, as the service lists them. */
export const PAGE_RECORDS = 200;

export interface LoadSpeedResult {
  rows: number;
  batchRows: number;
  /** The sizes of the batches the walk committed in the first load (it grows them while the writer is busy). */
  firstLoadBatches: number[];
  upsertBatches: number[];
  /** Rows/s of DuckDB's own `INSERT INTO … SELECT * FROM read_json(…)` of the same rows into a fresh table. */
  duckdbRowsPerSec: number;
  /**
   * Rows/s of DuckDB loading the service's page bodies themselves into a table of the warehouse's shape at the
   * writer's settings (every property a typed cell and the properties' hash in SQL, 100,000-record commits;
   * `pageBodiesLoad`): the most a first load that handed DuckDB the pages whole could reach.
   */
  duckdbPageBodiesRowsPerSec: number;
  /** DuckDB threads the warehouse's writer runs (`writerThreads`), which the batched loads below run too. */
  writerThreads: number;
  /**
   * DuckDB itself committing the very batches the first load (and the upsert) committed, the same statement per
   * batch, each batch committed, at the writer's settings; without and with each row also into a history table
   * (the second write every version costs). The with-history figure is the commit path's baseline; the same on
   * all cores is said beside it.
   */
  duckdbBatchedRowsPerSec: number;
  duckdbBatchedWithHistoryRowsPerSec: number;
  duckdbBatchedWithHistoryAllCoresRowsPerSec: number;
  /** The same for the upsert's batches, each replacing the stored rows of its ids (DELETE, then INSERT) in a file holding the first load. */
  duckdbUpsertBatchesWithHistoryRowsPerSec: number;
  firstLoadRowsPerSec: number;
  upsertRowsPerSec: number;
  /**
   * The share of each walk's time the main thread was busy (event-loop utilization): near 1, the walk's own work
   * (parsing and encoding pages) bounds it; well below, the writer does.
   */
  firstLoadMainThreadBusy: number;
  upsertMainThreadBusy: number;
  /**
   * The share of each walk's time a commit (or the final checkpoint) was being written: near 1 with the main
   * thread well below, the writer bounds the walk; both near 1, the two share the cores.
   */
  firstLoadWriterBusy: number;
  upsertWriterBusy: number;
}

/** One walk of the load bench: its speed, its batches, and how busy each side of it was. */
interface WalkTimes {
  rowsPerSec: number;
  batches: number[];
  mainThreadBusy: number;
  writerBusy: number;
}

const lit = quoteLiteral;

/** Every record a microsecond newer, with one value changed: an upsert that must replace every row. */
export function touched(records: ServiceRecord[]): ServiceRecord[] {
  return records.map((r) => ({
    ...r,
    updated_at: microsToIso(parseInstantMicros(r.updated_at)! + 1n),
    properties: { ...r.properties, amount: typeof r.properties.amount === 'number' ? r.properties.amount + 1 : 1 },
  }));
}

/**
 * `rows` deals of the simulator as the bytes of list pages (`PAGE_RECORDS` each), the same rows touched (see
 * `touched`), and their property definitions. Only text leaves: no record object outlives this call.
 */
export function servicePages(rows: number): { pages: Buffer[]; touchedPages: Buffer[]; definitions: PropertyDefinition[] } {
  const sim = createSimulator({
    seed: 42,
    size: { deals: rows, companies: 20, contacts: 20, meetingLogs: 1, contactActivities: 1, users: 5 },
  });
  const truth = sim.admin.truth();
  const records = truth.records.deals as ServiceRecord[];
  // Bytes, as a page comes off the socket: a string JSON.stringify made is not flat, and its first parse would
  // pay for making it one (a page's text is past V8's 128 KiB, about 1 ms a page), which no sync pays.
  const paged = (list: readonly ServiceRecord[]) =>
    Array.from({ length: Math.ceil(list.length / PAGE_RECORDS) }, (_, i) =>
      Buffer.from(JSON.stringify({ results: list.slice(i * PAGE_RECORDS, (i + 1) * PAGE_RECORDS) })),
    );
  return { pages: paged(records), touchedPages: paged(touched(records)), definitions: truth.properties.deals as PropertyDefinition[] };
}

/** How `benchLoadSpeed` measures: the sync's settings, and how many rounds. */
export interface LoadSpeedOptions {
  rows: number;
  /** The sync's SALESYNC_FLUSH_ROWS. */
  batchRows: number;
  /** The warehouse settings a sync would open the file with (SALESYNC_DUCKDB_MEMORY, SALESYNC_LINGER). */
  memoryLimit: string;
  lingerMs: number;
  /**
   * Rounds, each our commit path then DuckDB's baselines of the very batches it committed: a figure and its
   * baseline measured side by side, round after round, so a machine that slows for a minute slows both.
   * @defaultValue 1
   */
  rounds?: number;
}

/** Pages a DuckDB-side first load would commit at once (`pageBodiesLoad`): 100,000 records. */
const PAGE_BODIES_COMMIT_PAGES = 500;

/**
 * Rows/s of DuckDB loading `pages` (list bodies as the service sends them) into a table of the warehouse's shape, at
 * the writer's settings (`settings`, the checkpoint threshold and row group size): each record unnested from
 * `results`, every property definition a typed cell, all read from one multi-path `json_extract_string` of the
 * properties (a `->>` per cell parses the JSON once per cell), the properties kept
 * as JSON with their `sha256`, committed `PAGE_BODIES_COMMIT_PAGES` pages at a time. What a first load that handed
 * DuckDB the pages whole could reach at best: no quarantine, no dedupe, no checkpoint row. Timed to the checkpoint.
 */
async function pageBodiesLoad(
  dir: string,
  pages: readonly Buffer[],
  definitions: readonly PropertyDefinition[],
  settings: DuckdbSettings,
): Promise<number> {
  const pagesDir = join(dir, 'pages');
  await mkdir(pagesDir, { recursive: true });
  const files = pages.map((_, i) => join(pagesDir, `${String(i).padStart(6, '0')}.json`));
  for (const [i, page] of pages.entries()) await writeFile(files[i]!, page);
  // Positional column names: two api_names may differ only in case, which DuckDB folds.
  const cells = definitions.map((d, i) => ({
    name: `p${i}`,
    type: sqlTypeFor(d.property_type),
    path: lit(`$.${JSON.stringify(d.api_name)}`),
  }));
  const typed = cells.filter((c) => c.type !== 'JSON');
  const nested = cells.filter((c) => c.type === 'JSON');
  const cellSql = (c: (typeof cells)[number]) => {
    if (c.type === 'JSON') return `j[${nested.indexOf(c) + 1}]`;
    const text = `v[${typed.indexOf(c) + 1}]`;
    return c.type === 'VARCHAR' ? text : `TRY_CAST(${text} AS ${c.type})`;
  };
  const nestedSql = nested.length === 0 ? '' : `, json_extract(r.properties, [${nested.map((x) => x.path).join(', ')}]) AS j`;
  const duckdb: Record<string, string> = { memory_limit: settings.memoryLimit };
  if (settings.threads !== undefined) duckdb.threads = String(settings.threads);
  const { instance, connection: c } = await openWriterDatabase(join(dir, 'page-bodies.duckdb'), duckdb);
  try {
    await c.run(`SET checkpoint_threshold = '${CHECKPOINT_THRESHOLD}'`);
    await c.run(
      `CREATE TABLE deals (id VARCHAR, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, ${cells.map((x) => `${x.name} ${x.type}`).join(', ')},
         _properties JSON, _synced_at TIMESTAMPTZ, _deleted_at TIMESTAMPTZ, _content_hash VARCHAR)`,
    );
    const t0 = performance.now();
    for (let first = 0; first < files.length; first += PAGE_BODIES_COMMIT_PAGES) {
      const batch = files.slice(first, first + PAGE_BODIES_COMMIT_PAGES).map(lit);
      const records = `read_json([${batch.join(', ')}], format = 'auto',
        columns = {results: 'STRUCT(id VARCHAR, created_at VARCHAR, updated_at VARCHAR, properties JSON)[]'})`;
      await c.run(
        `BEGIN; INSERT INTO deals
         SELECT r.id, CAST(r.created_at AS TIMESTAMPTZ), CAST(r.updated_at AS TIMESTAMPTZ), ${cells.map(cellSql).join(', ')},
                r.properties, now(), NULL, sha256(CAST(r.properties AS VARCHAR))
         FROM (SELECT r, json_extract_string(r.properties, [${typed.map((x) => x.path).join(', ')}]::VARCHAR[]) AS v${nestedSql}
               FROM (SELECT unnest(results) AS r FROM ${records})); COMMIT`,
      );
    }
    await c.run('CHECKPOINT');
    const seconds = (performance.now() - t0) / 1000;
    const loaded = Number((await c.runAndReadAll('SELECT count(*) AS n FROM deals')).getRowObjects()[0]!.n);
    return loaded / seconds;
  } finally {
    c.closeSync();
    instance.closeSync();
    await rm(pagesDir, { recursive: true, force: true });
  }
}

/** A round's step: its failure says which step failed (a DuckDB error alone names no statement). */
async function step<T>(name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    // The first line: DuckDB goes on with SQL-level "Possible solutions", which would fill the bench row.
    const message = (error instanceof Error ? error.message : String(error)).split('\n', 1)[0];
    throw new Error(`${name}: ${message}`, { cause: error });
  }
}

/** The rounds that completed, and why each of the others failed (`round N, step: message`). */
export interface LoadSpeedRounds {
  results: LoadSpeedResult[];
  failures: string[];
}

/**
 * Our commit path (pages through the walk's batching, each batch the warehouse's commitBatch in its own
 * transaction with a checkpoint) against DuckDB itself committing the very same batches with their history rows,
 * and against DuckDB's own one-shot load of the same rows into a fresh table: the physical limit of the file.
 * One result per round (`LoadSpeedOptions.rounds`), the same service pages in each.
 */
export async function benchLoadSpeed(options: LoadSpeedOptions): Promise<LoadSpeedRounds> {
  // The rows as the service would send them: pages of JSON bytes, parsed one at a time as the API client hands
  // them over. The simulator and its records are gone before anything is timed: a heap holding every record
  // makes each collection slower than a sync's, whose records die with their batch.
  const service = servicePages(options.rows);
  // A round that fails is reported beside the others rather than losing them (a rare DuckDB error in one of the
  // baselines' statements once ended a whole bench run); a section with no round left fails.
  const rounds: LoadSpeedRounds = { results: [], failures: [] };
  for (let round = 0; round < (options.rounds ?? 1); round += 1) {
    try {
      rounds.results.push(await loadSpeedRound(options, service));
    } catch (error) {
      rounds.failures.push(`round ${round + 1}, ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (rounds.results.length === 0) throw new Error(`every round failed: ${rounds.failures.join('; ')}`);
  return rounds;
}

async function loadSpeedRound(options: LoadSpeedOptions, service: ReturnType<typeof servicePages>): Promise<LoadSpeedResult> {
  const dir = await mkdtemp(join(tmpdir(), 'salesync-bench-load-'));
  try {
    const { pages, touchedPages, definitions } = service;
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

    // Committed as a walk commits them (`walkPages`): pages of the service's size arrive as fast as the writer
    // takes them, batches of SALESYNC_FLUSH_ROWS grow while it is busy, and each batch is encoded while the ones
    // before it are written.
    const commitAll = async (bodies: readonly Buffer[]): Promise<WalkTimes> => {
      const started = performance.now();
      // Time inside the writer's commits (one at a time) and the final checkpoint.
      let writing = 0;
      const written = async (work: () => Promise<unknown>) => {
        const from = performance.now();
        await work();
        writing += performance.now() - from;
      };
      const loop = performance.eventLoopUtilization();
      const batches: number[] = [];
      const api = {
        async *listPages(): AsyncGenerator<ListPage<ServiceRecord>> {
          for (const [i, body] of bodies.entries()) {
            await new Promise((resolve) => setImmediate(resolve)); // a page's I/O: the writer's answers get their turn
            const next = i + 1 < bodies.length ? `bench-${i + 1}` : null;
            // Parsed as the client parses a page (validation aside).
            const { results } = parseJson(body) as { results: ServiceRecord[] };
            yield { results, nextCursor: next, serverDate: null, rejects: [] };
          }
        },
      } as unknown as SalesApi;
      await walkPages({
        api,
        warehouse,
        resource: 'deals',
        updatedAfter: null,
        after: null,
        settings: { ...syncSettings(DEFAULT_CONFIG), flushRows: options.batchRows },
        log: pino({ level: 'silent' }),
        counters: { pages: 0, records: 0, details: 0 },
        progress: trackProgress('deals', 0, () => 0).progress,
        propertyColumns: definitions.length,
        report: () => undefined,
        recordBuffer: () => warehouse.recordBuffer('deals', { observedWins: false }),
        commit: (pages, cursor) => {
          batches.push(pages.records.added);
          const batch = warehouse.prepareBatch('deals', {
            records: pages.records,
            checkpoint: { cursor, updatedAfter: null, startedAt: '2026-01-01T00:00:00Z', mode: 'full' },
          });
          return () => written(() => warehouse.commitBatch('deals', batch));
        },
      });
      // Until the file is closed: DuckDB's own loads below are timed to their checkpoint too.
      await written(() => warehouse.close());
      const elapsed = performance.now() - started;
      return {
        rowsPerSec: options.rows / (elapsed / 1000),
        batches,
        mainThreadBusy: performance.eventLoopUtilization(loop).utilization,
        writerBusy: writing / elapsed,
      };
    };
    let firstLoad: WalkTimes;
    let upsert: WalkTimes;
    try {
      firstLoad = await step('our first load', () => commitAll(pages));
      upsert = await step('our upsert', () => commitAll(touchedPages));
    } finally {
      // After a failed commit too: a file left lingering open would still be writing while the directory goes.
      await warehouse.close();
    }

    // The same rows, as DuckDB itself would bulk-load them: NDJSON of the table (whole, and cut into the sync's
    // batches), read back with its types.
    const ndjson = join(dir, 'deals.ndjson');
    const source = await DuckDBInstance.create(path);
    const sourceConnection = await source.connect();
    let firstLoadBatches: BatchedTable;
    let upsertBatches: BatchedTable;
    try {
      // A commit path that wrote less than it was given would read as fast: every record once, two versions each.
      await step('the check of what the commit path wrote', () =>
        assertHolds(
          connectionQuery(sourceConnection),
          { deals: options.rows, deals_history: { rows: 2 * options.rows, ids: options.rows } },
          `the commit path, given ${options.rows} records loaded then changed,`,
        ),
      );
      await step('the export of its rows as NDJSON', () => sourceConnection.run(`COPY deals TO ${lit(ndjson)} (FORMAT json)`));
      firstLoadBatches = await step('the export of its first-load batches', () =>
        exportBatches(sourceConnection, 'deals', join(dir, 'batches'), firstLoad.batches),
      );
      upsertBatches = await step('the export of its upsert batches', () =>
        exportBatches(sourceConnection, 'deals', join(dir, 'upsert-batches'), upsert.batches),
      );
    } finally {
      sourceConnection.closeSync();
      source.closeSync();
    }

    // Timed from the first statement to the last checkpoint, in a fresh file: DuckDB's own defaults for the
    // one-shot load (the physical limit); for the batches, the settings the warehouse opens its file with (memory
    // limit, checkpoint threshold, threads, row group size), and the same on all cores.
    // `over`: loaded first, untimed, with history; the timed batches then replace its rows (an upsert).
    const load = async (
      name: string,
      table: BatchedTable,
      withHistory: boolean,
      settings: DuckdbSettings | null,
      over?: BatchedTable,
    ): Promise<number> => {
      const path = join(dir, name);
      let instance: DuckDBInstance;
      let c: DuckDBConnection;
      if (settings) {
        // As the writer opens the warehouse (its row group size too), at these settings.
        const duckdb: Record<string, string> = { memory_limit: settings.memoryLimit };
        if (settings.threads !== undefined) duckdb.threads = String(settings.threads);
        ({ instance, connection: c } = await openWriterDatabase(path, duckdb));
        await c.run(`SET checkpoint_threshold = '${CHECKPOINT_THRESHOLD}'`); // as the warehouse sets it
      } else {
        instance = await DuckDBInstance.create(path);
        c = await instance.connect();
      }
      await createBatchedTables(c, [table]);
      if (over) {
        await loadBatched(c, [over], true);
        await c.run('CHECKPOINT');
      }
      const t0 = performance.now();
      await loadBatched(c, [table], withHistory, over !== undefined);
      await c.run('CHECKPOINT');
      const rowsPerSec = options.rows / ((performance.now() - t0) / 1000);
      c.closeSync();
      instance.closeSync();
      return rowsPerSec;
    };
    const asWarehouse = { memoryLimit: options.memoryLimit, threads: Number(WRITER_SETTINGS.threads) };
    // Each reader thread past the first needs a read_json buffer (16 MB records, doubled) of its own.
    const allCores = { memoryLimit: `${Math.ceil(memoryLimitMb(options.memoryLimit)) + 32 * (cpus().length - 1)}MB` };
    return {
      rows: options.rows,
      batchRows: options.batchRows,
      firstLoadBatches: firstLoad.batches,
      upsertBatches: upsert.batches,
      writerThreads: asWarehouse.threads,
      duckdbRowsPerSec: await step("DuckDB's one-shot load", () =>
        load('baseline.duckdb', { ...firstLoadBatches, batches: [ndjson] }, false, null),
      ),
      duckdbPageBodiesRowsPerSec: await step("DuckDB's load of the page bodies", () =>
        pageBodiesLoad(dir, pages, definitions, asWarehouse),
      ),
      duckdbBatchedRowsPerSec: await step("DuckDB's batches", () => load('batched.duckdb', firstLoadBatches, false, asWarehouse)),
      duckdbBatchedWithHistoryRowsPerSec: await step("DuckDB's batches with history", () =>
        load('batched-history.duckdb', firstLoadBatches, true, asWarehouse),
      ),
      duckdbBatchedWithHistoryAllCoresRowsPerSec: await step("DuckDB's batches with history on all cores", () =>
        load('batched-history-all.duckdb', firstLoadBatches, true, allCores),
      ),
      duckdbUpsertBatchesWithHistoryRowsPerSec: await step("DuckDB's upsert batches", () =>
        load('upsert-batches-history.duckdb', upsertBatches, true, asWarehouse, firstLoadBatches),
      ),
      firstLoadRowsPerSec: firstLoad.rowsPerSec,
      upsertRowsPerSec: upsert.rowsPerSec,
      firstLoadMainThreadBusy: firstLoad.mainThreadBusy,
      upsertMainThreadBusy: upsert.mainThreadBusy,
      firstLoadWriterBusy: firstLoad.writerBusy,
      upsertWriterBusy: upsert.writerBusy,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
