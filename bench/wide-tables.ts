/**
 * How many property columns a memory limit holds: for each `--columns` count, a deals table of that many
 * properties (every third a number, the rest short text) takes `--batches` committed batches of 2000 records,
 * then the same records again, newer (each stored row replaced), through the warehouse at `--memory` (by
 * default the limit a sync sets itself when SALESYNC_DUCKDB_MEMORY is unset), as a sync opens it. Each count in
 * a fresh file; prints whether it held, or the error's code and first line.
 *
 *   npm run bench:wide -- [--memory 256MB|auto] [--columns 200,250] [--batches 10]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { SalesyncError } from '../src/core/errors.js';
import { openWarehouse } from '../src/warehouse/index.js';
import { automaticMemoryLimit } from '../src/warehouse/memory-limit.js';
import { recordColumns } from '../src/warehouse/rows.js';
import { wideDefinitions, wideRecord } from './wide-records.js';
import { CommitQueue } from '../src/sync/commit-queue.js';

const BATCH_ROWS = 2000;

const { values } = parseArgs({
  options: {
    memory: { type: 'string', default: 'auto' },
    columns: { type: 'string', default: '200,250' },
    batches: { type: 'string', default: '10' },
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

for (const width of values.columns.split(',').map(Number)) {
  process.stdout.write(
    `${width} property columns at ${memoryLimit ?? `the automatic limit (${automaticMemoryLimit(recordColumns([]).length + width)})`}, ${batches} batches of ${BATCH_ROWS} twice: ${await trial(width)}\n`,
  );
}
