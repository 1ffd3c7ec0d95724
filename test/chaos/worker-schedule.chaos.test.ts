/**
 * The schedule end to end, with real timers: `schedule` registers the Job Schedulers, a worker keeps the warehouse
 * equal to the service with no manual step, and a standby worker takes over when the owner stops. Mostly waiting
 * for schedules and leases (about 40 s), so it runs with the chaos suite rather than in every `npm test`; the jobs
 * themselves are proved in test/jobs/jobs.test.ts and the worker's shutdown in test/jobs/worker.integration.test.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createWarehouse } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness } from '../support/harness.js';
import { useTestRedis } from '../support/use-redis.js';
import { cliEnv, runCli, startCli, waitFor } from '../jobs/helpers.js';

const silent = pino({ level: 'silent' });
const redis = useTestRedis();

describe('salesync worker on a schedule', () => {
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
    expect((JSON.parse(again.output) as unknown[]).length).toBe(13);

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
    expect(listed.output).toMatch(/removed 13 schedules/);
    await harness.close();
    // Mostly waiting for schedules, leases and takeovers: ~110 s alone, more on a loaded CI machine.
  }, 240_000);
});
