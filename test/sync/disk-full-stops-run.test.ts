import { afterEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/index.js';
import { warehouseFailure } from '../../src/warehouse/connection.js';
import type { Warehouse } from '../../src/warehouse/types.js';
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
