import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { openQueue } from '../../jobs/queue.js';
import { RESOURCE_NAMES } from '../../src/core/resources.js';
import { createWarehouse } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness } from '../support/harness.js';
import { useTestRedis } from '../support/use-redis.js';
import { cliEnv, pendingJobs, startCli, waitFor } from './helpers.js';

// These spawn the built CLI (`npm test` builds first; run `npm run build` before running this file alone).
const silent = pino({ level: 'silent' });
const redis = useTestRedis();

describe('salesync worker', () => {
  it('on SIGTERM mid-walk commits what it holds and exits 0; restarted, it resumes and ends equal to the truth', async () => {
    const harness = await startHarness({ size: { meetingLogs: 300 }, perKeyPerMinute: 2400 });
    const prefix = `${redis.prefix}-term`;
    const env = cliEnv(harness.url, harness.config.warehousePath, redis.url, prefix, {
      SALES_API_RATE_LIMIT: '2400',
      SALESYNC_FLUSH_ROWS: '200',
      SALESYNC_LEASE_TTL: '3s',
    });
    const queue = openQueue(redis.connect(), prefix);
    for (const resource of RESOURCE_NAMES) await queue.add('sync', { resource, mode: 'incremental' });

    const first = startCli(['worker'], env);
    // Meeting logs need one GET per log: wait until their walk has committed a page and is still going.
    await waitFor(
      async () => (await queue.getJobs(['active'])).find((j) => (j.data as { resource: string }).resource === 'meeting-logs')?.progress,
      (p) => typeof p === 'object' && p !== null && (p as { written: number }).written > 0,
      30_000,
      'a committed meeting-logs page',
    );
    first.child.kill('SIGTERM');
    expect(await first.exited, first.output()).toBe(0);
    expect(first.output()).toMatch(/walk interrupted/);
    // The cut job waits (delayed) for the next worker, without spending an attempt.
    expect(await pendingJobs(queue)).toBeGreaterThan(0);

    const second = startCli(['worker'], env);
    await waitFor(
      () => pendingJobs(queue),
      (n) => n === 0,
      60_000,
      'the queue to drain',
    );
    second.child.kill('SIGTERM');
    expect(await second.exited, second.output()).toBe(0);
    expect(second.output()).toMatch(/resuming walk from its checkpoint/);
    await queue.close();

    const warehouse = createWarehouse(harness.config, silent);
    await expectMirrorsTruth(warehouse, harness.sim);
    const logs = (await warehouse.recentRuns(50))
      .filter((r) => r.resource === 'meeting-logs' && r.mode !== 'summaries')
      .map((r) => r.outcome);
    expect(logs.sort()).toEqual(['interrupted', 'succeeded']);
    await harness.close();
  }, 90_000);
});
