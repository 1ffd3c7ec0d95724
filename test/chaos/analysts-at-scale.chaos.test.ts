/**
 * Issue 19's acceptance at its own scale: a reader holding WAREHOUSE_PATH for a whole 100k-record sync, and
 * another opening it every 100 ms, are never refused, and the sync succeeds (published-warehouse.test.ts does
 * the same on 4k records in every npm test).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createWarehouse } from '../../src/sync/index.js';
import type { DuckDbHolder } from '../support/duckdb-holder.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';
import { syncUnderHeldReaders } from '../support/held-reader.js';
import { chaosReport } from './chaos-settings.js';

const SIZE = { deals: 40_000, companies: 10_000, contacts: 40_000, meetingLogs: 200, contactActivities: 9_800, users: 20 };

let harness: Harness | undefined;
const holders: DuckDbHolder[] = [];
afterEach(async () => {
  await Promise.all(holders.splice(0).map((h) => h.leave()));
  await harness?.close();
  harness = undefined;
});

describe('the analysts\u2019 file at 100k records', () => {
  it('a reader holding WAREHOUSE_PATH for a whole 100k-record sync and another opening it every 100 ms are never refused; the sync succeeds and the file mirrors the service', async () => {
    harness = await startHarness({ seed: 1907, size: SIZE });
    expect((await harness.sync()).ok).toBe(true);
    harness.sim.admin.mutateRandom(500, 19, ['update', 'create', 'activity']);
    const run = await syncUnderHeldReaders(harness, holders);
    chaosReport('a held reader through a 100k-record sync', {
      records: Object.values(SIZE).reduce((a, b) => a + b, 0),
      ok: String(run.ok),
      refused: run.refused,
      opens: run.opens,
      copies: run.copies,
    });
    expect(run.ok).toBe(true);
    expect(run.refused).toBe(0);
    expect(run.opens).toBeGreaterThan(3);
    await expectMirrorsTruth(createWarehouse(harness.config, pino({ level: 'silent' })), harness.sim);
  }, 600_000);
});
