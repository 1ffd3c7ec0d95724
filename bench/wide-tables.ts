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
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { SalesyncError } from '../src/core/errors.js';
import { openWarehouse, quoteIdentifier } from '../src/warehouse/index.js';
import { automaticMemoryLimit } from '../src/warehouse/memory-limit.js';
import { recordColumns } from '../src/warehouse/rows.js';
import { mixedDefinitions, mixedRecord, wideDefinitions, wideRecord } from '../devtools/wide-records.js';
import { CommitQueue } from '../src/sync/commit-queue.js';

const BATCH_ROWS = 2000;

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
const batches = Number(values.batches);

/** Both passes, two commits in flight as a walk hands them over; the first failure ends the trial. */
async function trial(width: number): Promise<string> {
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
async function step(name: string, work: () => Promise<string>): Promise<boolean> {
  const started = performance.now();
  let outcome: string;
  let ok = true;
  try {
    outcome = await work();
  } catch (error) {
    ok = false;
    const code = error instanceof SalesyncError ? error.code : 'error';
    outcome = `failed: ${code}: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`;
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  // resourceUsage().maxRSS is in kilobytes.
  const peak = Math.round(process.resourceUsage().maxRSS / 1024);
  process.stdout.write(`${name}: ${seconds} s, peak RSS so far ${peak} MB; ${outcome}\n`);
  return ok;
}

async function wideOrganization(width: number, initial: number, records: number, fill: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'salesync-bench-wide-org-'));
  const warehouse = openWarehouse({
    path: join(dir, 'warehouse.duckdb'),
    logger: pino({ level: 'silent' }),
    ...(memoryLimit ? { memoryLimit } : {}),
  });
  const all = mixedDefinitions(width);
  try {
    const ok =
      (await step(
        `define ${initial} properties`,
        async () => `${(await warehouse.applyPropertyDefinitions('deals', all.slice(0, initial))).length} columns`,
      )) &&
      (await step(`first sync of ${records} deals, each with values for ${fill * 100} % of ${width} properties`, async () => {
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
        return `${records} written`;
      })) &&
      (await step(`add ${width - initial} columns at once to ${records} stored rows (definitions, ALTERs, fill, views)`, async () => {
        const plan = await warehouse.applyPropertyDefinitions('deals', all);
        const [row] = await warehouse.query(`SELECT count(${quoteIdentifier(plan.at(-1)!.columnName)}) AS filled FROM deals`);
        return `${plan.length} property columns; the last filled in ${String(row?.filled)} rows`;
      }));
    // The reads go on after a failed one: a view that cannot be read says nothing about the export.
    if (ok) {
      await step('SELECT * FROM deals_view LIMIT 10', async () => {
        const rows = await warehouse.query('SELECT * FROM deals_view LIMIT 10');
        return `${rows.length} rows of ${Object.keys(rows[0] ?? {}).length} columns`;
      });
      await step('export (Parquet, every table and view)', async () => {
        const files = await warehouse.exportParquet(join(dir, 'export'));
        return `${files.length} files`;
      });
    }
  } finally {
    await warehouse.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

if (values.org !== undefined) {
  await wideOrganization(Number(values.org), Number(values.initial), Number(values.records), Number(values.fill));
  process.exit(0);
}

for (const width of values.columns.split(',').map(Number)) {
  process.stdout.write(
    `${width} property columns at ${memoryLimit ?? `the automatic limit (${automaticMemoryLimit(recordColumns([]).length + width)})`}, ${batches} batches of ${BATCH_ROWS} twice: ${await trial(width)}\n`,
  );
}
