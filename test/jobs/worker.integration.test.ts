import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { openQueue } from '../../jobs/queue.js';
import { RESOURCE_NAMES } from '../../src/core/resources.js';
import { createWarehouse } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness } from '../support/harness.js';
import { useTestRedis } from '../support/use-redis.js';
import { cliEnv, pendingJobs, runCli, startCli, waitFor } from './helpers.js';

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

  it('with `schedule`, keeps the warehouse fresh with no manual step; a standby worker waits for the owner', async () => {
    // Small on purpose: schedules fire every 2 s, and every check compares the whole warehouse with the truth.
    const harness = await startHarness({
      size: { deals: 120, companies: 40, contacts: 150, meetingLogs: 20, contactActivities: 60, users: 5 },
    });
    const prefix = `${redis.prefix}-fresh`;
    // Schedules every 2 s keep the worker writing all the time; without a linger the test's reads find gaps.
    const env = cliEnv(harness.url, harness.config.warehousePath, redis.url, prefix, { SALESYNC_LEASE_TTL: '3s', SALESYNC_LINGER: '0' });
    const scheduled = await runCli(['schedule', '--sync-every', '2s', '--users-every', '2s'], env);
    expect(scheduled.code, scheduled.output).toBe(0);
    expect(scheduled.output).toMatch(/salesync:sync:deals/);
    const again = await runCli(['schedule', '--sync-every', '2s', '--users-every', '2s', '--json'], { ...env, LOG_LEVEL: 'warn' });
    expect((JSON.parse(again.output) as unknown[]).length).toBe(12);

    const owner = startCli(['worker'], env);
    await waitFor(
      async () => owner.output(),
      (o) => o.includes('worker started'),
      20_000,
      'the worker to start',
    );
    const standby = startCli(['worker'], env);
    await waitFor(
      async () => standby.output(),
      (o) => o.includes('standby'),
      20_000,
      'the standby line',
    );

    const warehouse = createWarehouse(harness.config, silent);
    // Checked every 2 s: each check opens the file, and the worker must not wait for the test to write.
    const mirrors = async () =>
      expectMirrorsTruth(warehouse, harness.sim).then(
        () => true,
        () => false,
      );
    const fresh = (what: string) => waitFor(mirrors, Boolean, 40_000, what, 2000);
    await fresh('the first scheduled syncs');
    harness.sim.admin.mutateRandom(40, 3, ['update', 'create', 'activity']);
    await fresh('the changes to arrive');

    // The owner stops; the standby takes over when the lease is released.
    owner.child.kill('SIGTERM');
    expect(await owner.exited, owner.output()).toBe(0);
    await waitFor(
      async () => standby.output(),
      (o) => o.includes('worker started'),
      20_000,
      'the standby to take over',
    );
    harness.sim.admin.mutateRandom(20, 4, ['update']);
    await sleep(500);
    await fresh('the standby to sync the changes');
    standby.child.kill('SIGTERM');
    expect(await standby.exited, standby.output()).toBe(0);

    const listed = await runCli(['schedule', '--remove'], env);
    expect(listed.output).toMatch(/removed 12 schedules/);
    await harness.close();
    // Mostly waiting for schedules, leases and takeovers: ~110 s alone, more on a loaded CI machine.
  }, 240_000);
});
