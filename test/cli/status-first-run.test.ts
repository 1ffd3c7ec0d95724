import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writerPathFor } from '../../src/warehouse/index.js';
import { cliEnv, runCli, type CliRun } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';

/**
 * `status` while the very first sync runs: the writer's file exists, nothing is published yet. That is no mistake
 * of configuration (exit 2): the table says so, and `--check` reports every resource as never completed (exit 4).
 */
let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({
    seed: 2301,
    size: { deals: 10, companies: 3, contacts: 3, meetingLogs: 1, contactActivities: 1, users: 2 },
  });
});
afterAll(async () => {
  await harness?.close();
});

describe('status during the first sync', () => {
  it('shows the warehouse as not published yet (exit 0), and --check names every resource never completed (exit 4)', async () => {
    const published = harness.config.warehousePath;
    // Slow answers keep the first sync running, unpublished, while status runs beside it.
    harness.sim.admin.setFaults({ latencyMs: 1500 });
    let finished = false;
    const sync = runCli(['sync'], cliEnv(harness)).then((run) => {
      finished = true;
      return run;
    });
    await expect.poll(() => existsSync(writerPathFor(published)), { timeout: 20_000, interval: 25 }).toBe(true);

    const [table, check, json] = await Promise.all([
      runCli(['status'], cliEnv(harness)),
      runCli(['status', '--check', '--max-age', '1h'], cliEnv(harness)),
      runCli(['status', '--json'], cliEnv(harness)),
    ]);
    expect(finished && existsSync(published), 'the sync ended before status ran: the test proved nothing').toBe(false);

    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/not published yet: a first sync is writing it \(or was stopped: run `salesync sync`\)/);
    expect(table.stdout).toMatch(/^deals\s+0\s+0\s/m);

    expect(check.code, check.stderr).toBe(4);
    const lines = check.stdout.trim().split('\n');
    expect(lines).toHaveLength(6);
    for (const line of lines) expect(line).toMatch(/^[a-z-]+: never_completed: no walk of [a-z-]+ has completed yet/);
    expect(check.stderr).toMatch(/^salesync: check_failed: /);
    expect(check.stderr).not.toMatch(/warehouse_missing/);

    expect(json.code, json.stderr).toBe(0);
    const body = JSON.parse(json.stdout) as { published: boolean; healthy: boolean; resources: { rows: number; lastRun: unknown }[] };
    expect(body.published).toBe(false);
    expect(body.healthy).toBe(false);
    expect(body.resources.every((r) => r.rows === 0 && r.lastRun === null)).toBe(true);

    harness.sim.admin.setFaults({});
    const run: CliRun = await sync;
    expect(run.code, run.stderr).toBe(0);
    expect((await runCli(['status', '--check', '--max-age', '1h'], cliEnv(harness))).code).toBe(0);
  });

  it('with neither a published file nor a writer file, is warehouse_missing, exit 2, asking for a first sync', async () => {
    const run = await runCli(['status'], cliEnv(harness, { WAREHOUSE_PATH: `${harness.config.warehousePath}.elsewhere.duckdb` }));
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toMatch(/^salesync: warehouse_missing: no warehouse at .*: run `salesync sync` first/);
  });
});
