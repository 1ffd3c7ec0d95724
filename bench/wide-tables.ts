/**
 * How many property columns a memory limit holds: for each `--columns` count, a deals table of that many
 * properties (every third a number, the rest short text) takes `--batches` committed batches of 2000 records,
 * then the same records again, newer (each stored row replaced), through the warehouse at `--memory` (by
 * default the limit a sync sets itself when SALESYNC_DUCKDB_MEMORY is unset), as a sync opens it. Each count in
 * a fresh file; prints whether it held, or the error's code and first line.
 *
 *   npm run bench:wide -- [--memory 256MB|auto] [--columns 200,250] [--batches 10]
 *
 * `--org <n>`: a wide organization instead, n properties (text, number, select and date in turn). `--records`
 * deals (default 20000), each with a value for `--fill` of them (default 0.1), are synced while `--initial` of
 * them are defined; then all n are: the rest get their columns at once, filled from the stored `_properties`.
 * Then `SELECT * FROM deals_view LIMIT 10` and an export. Prints each step's time and the peak RSS so far.
 *
 *   npm run bench:wide -- --org 2000 [--initial 0] [--records 20000] [--fill 0.1]
 *
 * `benchWideOrganization` runs the same in a process of its own (bench/wide-child.ts), for the main bench: its
 * peak RSS is the work's alone. Importing this module runs nothing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { SalesyncError } from '../src/core/errors.js';
import { openWarehouse, quoteIdentifier } from '../src/warehouse/index.js';
import { automaticMemoryLimit } from '../src/warehouse/memory-limit.js';
import { recordColumns } from '../src/warehouse/rows.js';
import { assertHolds } from '../devtools/mirror-check.js';
import { duckdbAllocatorEnv } from './processes.js';
import { mixedDefinitions, mixedRecord, wideDefinitions, wideRecord } from '../devtools/wide-records.js';
import { CommitQueue } from '../src/sync/commit-queue.js';

const BATCH_ROWS = 2000;

/** Both passes, two commits in flight as a walk hands them over; the first failure ends the trial. */
async function trial(width: number, batches: number, memoryLimit: string | undefined): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'salesync-bench-wide-'));
  const warehouse = openWarehouse({
    path: join(dir, 'warehouse.duckdb'),
    logger: pino({ level: 'silent' }),
    ...(memoryLimit ? { memoryLimit } : {}),
  });
  try {
    const defs = wideDefinitions(width);
    await warehouse.applyPropertyDefinitions('deals', defs);
    for (const day of [1, 2]) {
      const commits = new CommitQueue();
      for (let b = 0; b < batches; b += 1) {
        const records = Array.from({ length: BATCH_ROWS }, (_, i) => wideRecord(b * BATCH_ROWS + i, day, defs));
        const checkpoint = { cursor: `c${b}`, updatedAfter: null, startedAt: '2026-01-01T00:00:00Z', mode: 'full' as const };
        await commits.push(() => {
          const batch = warehouse.prepareBatch('deals', { records, checkpoint });
          return async () => void (await warehouse.commitBatch('deals', batch));
        });
      }
      await commits.drain();
    }
    return 'held';
  } catch (error) {
    const code = error instanceof SalesyncError ? error.code : 'error';
    return `failed: ${code}: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`;
  } finally {
    await warehouse.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

/** One step of the wide organization: its time and the process's peak RSS so far, or how it failed. */
interface StepOutcome {
  ok: boolean;
  ms: number;
  peakRssMb: number;
  error?: string;
}

async function step(name: string, work: () => Promise<string>, print: boolean): Promise<StepOutcome> {
  const started = performance.now();
  let outcome: string;
  let error: string | undefined;
  try {
    outcome = await work();
  } catch (failure) {
    const code = failure instanceof SalesyncError ? failure.code : 'error';
    error = `${name}: ${code}: ${(failure instanceof Error ? failure.message : String(failure)).split('\n')[0]}`;
    outcome = `failed: ${code}: ${(failure instanceof Error ? failure.message : String(failure)).split('\n')[0]}`;
  }
  const ms = performance.now() - started;
  // resourceUsage().maxRSS is in kilobytes.
  const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  if (print) process.stdout.write(`${name}: ${(ms / 1000).toFixed(1)} s, peak RSS so far ${peakRssMb} MB; ${outcome}\n`);
  return { ok: error === undefined, ms, peakRssMb, ...(error === undefined ? {} : { error }) };
}

export interface WideOrganizationOptions {
  /** Custom properties of the organization (text, number, select and date in turn). */
  properties: number;
  /** Deals synced before the rest of the properties are defined. */
  records: number;
  /** Properties defined before the first sync. */
  initial: number;
  /** The share (0–1) of the properties each deal has a value for. */
  fill: number;
  /** DuckDB's limit; absent: the one a sync sets itself when SALESYNC_DUCKDB_MEMORY is unset. */
  memoryLimit?: string;
}

export interface WideOrganizationResult {
  properties: number;
  records: number;
  firstSyncMs: number;
  /** Defining the rest at once: definitions, the table rebuilt with the new columns filled (or ALTERs, then the fill), views. */
  addColumnsMs: number;
  queryMs: number;
  exportMs: number;
  /** Peak RSS of the process that did the work (bench/wide-child.ts when run through `benchWideOrganization`). */
  peakRssMb: number;
  /** Peak RSS after each step (cumulative: the first sync's peak is part of every later one). */
  peakRssMbAfter: { firstSync: number; addColumns: number; query: number; export: number };
  ok: boolean;
  error?: string;
}

/** The wide organization in this process; `print` writes each step's line as it ends. */
export async function runWideOrganization(options: WideOrganizationOptions, print = false): Promise<WideOrganizationResult> {
  const { properties: width, initial, records, fill, memoryLimit } = options;
  const dir = await mkdtemp(join(tmpdir(), 'salesync-bench-wide-org-'));
  const warehouse = openWarehouse({
    path: join(dir, 'warehouse.duckdb'),
    logger: pino({ level: 'silent' }),
    ...(memoryLimit ? { memoryLimit } : {}),
  });
  const all = mixedDefinitions(width);
  const skipped: StepOutcome = { ok: false, ms: Number.NaN, peakRssMb: Number.NaN };
  try {
    const define = await step(
      `define ${initial} properties`,
      async () => `${(await warehouse.applyPropertyDefinitions('deals', all.slice(0, initial))).length} columns`,
      print,
    );
    const sync = !define.ok
      ? skipped
      : await step(
          `first sync of ${records} deals, each with values for ${fill * 100} % of ${width} properties`,
          async () => {
            const commits = new CommitQueue();
            for (let start = 0; start < records; start += BATCH_ROWS) {
              const page = Array.from({ length: Math.min(BATCH_ROWS, records - start) }, (_, i) => mixedRecord(start + i, 1, all, fill));
              const checkpoint = { cursor: `c${start}`, updatedAfter: null, startedAt: '2026-01-01T00:00:00Z', mode: 'full' as const };
              await commits.push(() => {
                const batch = warehouse.prepareBatch('deals', { records: page, checkpoint });
                return async () => void (await warehouse.commitBatch('deals', batch));
              });
            }
            await commits.drain();
            await assertHolds((sql) => warehouse.query(sql), { deals: records }, `the first sync of ${records} wide deals`);
            return `${records} written`;
          },
          print,
        );
    const add = !sync.ok
      ? skipped
      : await step(
          `add ${width - initial} columns at once to ${records} stored rows (definitions, columns and their fill, views)`,
          async () => {
            const plan = await warehouse.applyPropertyDefinitions('deals', all);
            const [row] = await warehouse.query(`SELECT count(${quoteIdentifier(plan.at(-1)!.columnName)}) AS filled FROM deals`);
            return `${plan.length} property columns; the last filled in ${String(row?.filled)} rows`;
          },
          print,
        );
    // The reads go on after a failed one: a view that cannot be read says nothing about the export.
    const query = !add.ok
      ? skipped
      : await step(
          'SELECT * FROM deals_view LIMIT 10',
          async () => {
            const rows = await warehouse.query('SELECT * FROM deals_view LIMIT 10');
            return `${rows.length} rows of ${Object.keys(rows[0] ?? {}).length} columns`;
          },
          print,
        );
    const exported = !add.ok
      ? skipped
      : await step(
          'export (Parquet, every table and view)',
          async () => {
            const files = await warehouse.exportParquet(join(dir, 'export'));
            return `${files.length} files`;
          },
          print,
        );
    const steps = [define, sync, add, query, exported];
    const error = steps.find((s) => s.error !== undefined)?.error;
    return {
      properties: width,
      records,
      firstSyncMs: sync.ms,
      addColumnsMs: add.ms,
      queryMs: query.ms,
      exportMs: exported.ms,
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
      peakRssMbAfter: { firstSync: sync.peakRssMb, addColumns: add.peakRssMb, query: query.peakRssMb, export: exported.peakRssMb },
      ok: steps.every((s) => s.ok),
      ...(error === undefined ? {} : { error }),
    };
  } finally {
    await warehouse.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The wide organization in a process of its own (bench/wide-child.ts): the peak RSS reported is the work's alone.
 * A child that dies (a FATAL DuckDB error, the kernel's OOM killer) is a failed result, not a throw.
 */
export async function benchWideOrganization(options: WideOrganizationOptions): Promise<WideOrganizationResult> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./wide-child.js', import.meta.url)), JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...duckdbAllocatorEnv() },
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const last = out.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(last) as WideOrganizationResult;
  } catch {
    const nan = Number.NaN;
    return {
      properties: options.properties,
      records: options.records,
      firstSyncMs: nan,
      addColumnsMs: nan,
      queryMs: nan,
      exportMs: nan,
      peakRssMb: nan,
      peakRssMbAfter: { firstSync: nan, addColumns: nan, query: nan, export: nan },
      ok: false,
      error: `wide-child exited with ${code} before reporting`,
    };
  }
}

// The command line only when run as a script: the main bench imports this module.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      memory: { type: 'string', default: 'auto' },
      columns: { type: 'string', default: '200,250' },
      batches: { type: 'string', default: '10' },
      org: { type: 'string' },
      initial: { type: 'string', default: '0' },
      records: { type: 'string', default: '20000' },
      fill: { type: 'string', default: '0.1' },
    },
  });
  const memoryLimit = values.memory === 'auto' ? undefined : values.memory;
  if (values.org !== undefined) {
    await runWideOrganization(
      {
        properties: Number(values.org),
        initial: Number(values.initial),
        records: Number(values.records),
        fill: Number(values.fill),
        ...(memoryLimit ? { memoryLimit } : {}),
      },
      true,
    );
    process.exit(0);
  }
  const batches = Number(values.batches);
  for (const width of values.columns.split(',').map(Number)) {
    process.stdout.write(
      `${width} property columns at ${memoryLimit ?? `the automatic limit (${automaticMemoryLimit(recordColumns([]).length + width)})`}, ${batches} batches of ${BATCH_ROWS} twice: ${await trial(width, batches, memoryLimit)}\n`,
    );
  }
}
