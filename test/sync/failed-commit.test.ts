import { existsSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/index.js';
import { warehouseFailure } from '../../src/warehouse/connection.js';
import type { PreparedBatch, Warehouse } from '../../src/warehouse/types.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('a full disk during a sync', () => {
  it('stops every walk at once: no other resource spends requests it could never commit', async () => {
    harness = await startHarness({
      seed: 71,
      size: { deals: 50, companies: 20, contacts: 30, meetingLogs: 2, contactActivities: 5, users: 3 },
    });
    const env = harness.env();
    const real = env.deps.warehouse;
    // The first deals commit meets a full disk (what DuckDB reports when the WAL cannot grow).
    const warehouse: Warehouse = {
      ...real,
      commitBatch: (resource, batch) =>
        resource === 'deals'
          ? Promise.reject(
              warehouseFailure(real.path, 'commitBatch', new Error('Could not write file "w.duckdb.wal": No space left on device')),
            )
          : real.commitBatch(resource, batch),
    };
    const report = await runSync({ ...env.deps, warehouse }, env.settings, {
      resources: ['deals', 'companies', 'contacts'],
      mode: 'incremental',
      concurrency: 1,
    });
    expect(report.results.map((r) => [r.resource, r.outcome, r.error?.code ?? null])).toEqual([
      ['deals', 'failed', 'warehouse_disk_full'],
      ['companies', 'interrupted', null],
      ['contacts', 'interrupted', null],
    ]);
    expect(report.results.slice(1).every((r) => r.requests === 0)).toBe(true);
    await env.close();
  });
});

describe('batches queued behind a commit that failed', () => {
  it('are discarded at once: their stage files are gone before the warehouse closes', async () => {
    harness = await startHarness({
      seed: 72,
      size: { deals: 2000, companies: 0, contacts: 0, meetingLogs: 0, contactActivities: 0, users: 1 },
    });
    // Batches of a page or two (10 rows, grown to 320 while a commit is being written: `grownBatchRows`): the
    // second commit is still failing while the walk prepares the next ones.
    const env = harness.env({ flushRows: 10 });
    const real = env.deps.warehouse;
    const stageFiles = new Map<PreparedBatch, Promise<string>>();
    let discarded = 0;
    let commits = 0;
    const warehouse: Warehouse = {
      ...real,
      prepareBatch: (resource, batch) => {
        const prepared = real.prepareBatch(resource, batch);
        // The stage file under way (internal to the warehouse).
        const early = (prepared as unknown as { early?: Promise<{ path: string }> }).early;
        if (early)
          stageFiles.set(
            prepared,
            early.then((file) => file.path),
          );
        return prepared;
      },
      discardBatch: (batch: PreparedBatch) => {
        discarded += 1;
        real.discardBatch(batch);
      },
      commitBatch: async (resource, batch) => {
        const file = stageFiles.get(batch as PreparedBatch);
        // The first commit goes through (it fixes the plan later batches are encoded with); the second fails late,
        // in DuckDB (its file no longer NDJSON), while the walk queues more behind it.
        if (++commits === 2 && file) {
          writeFileSync(await file, '{"c0": \n');
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
        return real.commitBatch(resource, batch);
      },
    };
    const report = await runSync({ ...env.deps, warehouse }, env.settings, { resources: ['deals'], mode: 'incremental', concurrency: 1 });
    expect(report.results[0]?.error?.code).toBe('warehouse_error');
    expect(discarded).toBeGreaterThan(0);
    const paths = await Promise.all(stageFiles.values());
    expect(paths.length).toBeGreaterThan(2);
    await new Promise((resolve) => setTimeout(resolve, 50)); // a discard removes its file without being awaited
    expect(paths.filter((path) => existsSync(path))).toEqual([]);
    await env.close();
  });
});
