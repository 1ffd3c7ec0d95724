import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { cliEnv, runCli } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startCli, waitFor } from '../jobs/helpers.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

// Contacts are 20 pages of 200: after two committed batches (the second may have grown to 1,000 rows while the
// writer was busy) at least 10 pages, 600 ms at 60 ms a page, are still to come when the signal is sent.
const SIZE = { deals: 40, companies: 10, contacts: 4000, meetingLogs: 4, contactActivities: 10, users: 3 };
const WHOLE_WALK_PAGES = 20;

describe('a sync told to stop', () => {
  it('a SIGTERM mid-walk ends the sync within 10 s with exit 130, what was fetched committed, and the rerun resumes from its checkpoint', async () => {
    harness = await startHarness({ seed: 2101, size: SIZE, faults: { latencyMs: 60 } });
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      ...cliEnv(harness, { SALESYNC_FLUSH_ROWS: '200', LOG_LEVEL: 'debug' }),
    };
    const cli = startCli(['sync', 'contacts'], env);
    await waitFor(
      async () => (cli.output().match(/batch committed/g) ?? []).length,
      (n) => n >= 2,
      60_000,
      'two committed batches',
    );
    const killedAt = Date.now();
    cli.child.kill('SIGTERM');
    const code = await Promise.race([cli.exited, sleep(30_000, 'still running' as const)]);
    if (code === 'still running') cli.child.kill('SIGKILL');
    expect(code, cli.output().slice(-2000)).toBe(130);
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    // One line says so, as for every other non-zero exit.
    expect(cli.output().match(/^salesync: interrupted: stopped by SIGTERM: the pages fetched were committed/gm)).toHaveLength(1);

    const runs = await harness.env().warehouse.query(`SELECT outcome FROM sync_runs WHERE resource = 'contacts' ORDER BY started_at`);
    expect(runs).toEqual([{ outcome: 'interrupted' }]);
    harness.sim.admin.clearFaults();
    harness.sim.admin.resetStats();
    const rerun = await runCli(['sync', 'contacts'], cliEnv(harness));
    expect(rerun.code, rerun.stderr).toBe(0);
    // Resumed, not restarted: fewer than the pages of a whole walk.
    expect(harness.sim.admin.stats().byRoute['GET /v1/contacts/']).toBeLessThan(WHOLE_WALK_PAGES);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['contacts'] });
  });
});
