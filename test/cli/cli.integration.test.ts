import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { cliEnv, runCli, type CliRun } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';
import { freePort as closedPort } from '../support/ports.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SIZE = { deals: 300, companies: 100, contacts: 1600, meetingLogs: 40, contactActivities: 100, users: 8 };

const envFor = cliEnv;

/** Run the CLI and list the npm packages it loaded (through test/support/record-modules.mjs). */
async function packagesLoaded(args: string[], env: Record<string, string>): Promise<{ run: CliRun; packages: Set<string> }> {
  const dir = await mkdtemp(join(tmpdir(), 'salesync-modules-'));
  try {
    const file = join(dir, 'modules.txt');
    const hook = new URL('../support/record-modules.mjs', import.meta.url).pathname;
    const run = await runCli(args, { ...env, NODE_OPTIONS: `--import=${hook}`, RECORD_MODULES_FILE: file });
    const urls = (await readFile(file, 'utf8')).split('\n');
    const packages = new Set(urls.flatMap((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.slice(1) ?? []));
    return { run, packages };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('salesync CLI', () => {
  it('syncs, then reports per-resource status as a table and as JSON', async () => {
    harness = await startHarness({ seed: 21, size: SIZE });
    const sync = await runCli(['sync'], envFor(harness));
    expect(sync.stderr).toBe('');
    expect(sync.code).toBe(0);
    // Not a terminal: one JSON log line per event, on stdout.
    const lines = sync.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string });
    expect(lines.filter((l) => l.msg === 'walk finished')).toHaveLength(6);

    const status = await runCli(['status', '--json'], envFor(harness));
    expect(status.code).toBe(0);
    const parsed = JSON.parse(status.stdout) as { resources: Array<{ resource: string; rows: number; lastRun: { outcome: string } }> };
    expect(parsed.resources.find((r) => r.resource === 'contacts')).toMatchObject({ rows: 1600, lastRun: { outcome: 'succeeded' } });

    const table = await runCli(['status'], envFor(harness));
    expect(table.stdout).toMatch(/contacts\s+1,600/);
  });

  it('a malformed key fails before any request with one line naming invalid_api_key_format, and never prints the key', async () => {
    harness = await startHarness({ seed: 22, size: SIZE });
    const key = 'sk_short0123';
    const run = await runCli(['sync', 'deals'], envFor(harness, { SALES_API_KEY: key }));
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^salesync: invalid_api_key_format: /);
    expect(run.stderr + run.stdout).not.toContain(key);
    expect(harness.sim.admin.stats().total).toBe(0);
  });

  it('a wrong key fails with one line naming unauthorized, and never prints the key', async () => {
    harness = await startHarness({ seed: 23, size: SIZE });
    const key = `sk_${'Q'.repeat(20)}${'7'.repeat(24)}`;
    const run = await runCli(['sync'], envFor(harness, { SALES_API_KEY: key }));
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^salesync: unauthorized: /);
    expect(run.stderr + run.stdout).not.toContain(key);
  });

  it('loads only what a command needs: --version loads neither DuckDB nor BullMQ, a sync without REDIS_URL and off a terminal no BullMQ, dashboard, YAML or terminal display', async () => {
    const version = await packagesLoaded(['--version'], {});
    expect(version.run.code).toBe(0);
    expect(version.packages).toContain('commander');
    for (const name of ['@duckdb/node-api', 'bullmq', 'ioredis', 'express', 'got', 'log-update', 'string-width']) {
      expect(version.packages).not.toContain(name);
    }

    harness = await startHarness({ seed: 27, size: SIZE });
    const sync = await packagesLoaded(['sync', 'users'], envFor(harness));
    expect(sync.run.code).toBe(0);
    expect(sync.packages).toContain('@duckdb/node-api');
    expect(sync.packages).toContain('got');
    for (const name of ['bullmq', 'express', '@bull-board/express', 'prom-client', 'yaml', 'log-update', 'string-width']) {
      expect(sync.packages).not.toContain(name);
    }
  });

  it('an unreachable service fails with one line naming service_unreachable', async () => {
    harness = await startHarness({ seed: 24, size: SIZE });
    const port = await closedPort();
    const run = await runCli(
      ['sync'],
      envFor(harness, { SALES_API_BASE_URL: `http://127.0.0.1:${port}`, SALES_API_RETRIES: '1', SALES_API_RETRY_DELAY: '10ms' }),
    );
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^salesync: service_unreachable: /);
  });

  it('an invalid response fails with one line naming invalid_response and keeps what was already synced', async () => {
    harness = await startHarness({ seed: 25, size: SIZE });
    expect((await runCli(['sync'], envFor(harness))).code).toBe(0);
    harness.sim.admin.updateRecord('deals', harness.sim.admin.truth().records.deals[0]!.id, { name: 'changed after the first sync' });
    harness.sim.admin.failNext(50, 'malformed', '/v1/deals/');
    const run = await runCli(['sync', 'deals'], envFor(harness, { SALES_API_RETRIES: '1', SALES_API_RETRY_DELAY: '10ms' }));
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^salesync: invalid_response: /);
    const counts = await harness.env().warehouse.tableCounts();
    expect(counts.deals).toBe(300);
  });

  it('a sync killed with SIGKILL mid-walk resumes from its checkpoint, ends equal to the truth, and marks the killed run abandoned', async () => {
    // Slow enough pages that the walk cannot finish between the second commit and the kill, however loaded the machine.
    harness = await startHarness({ seed: 26, size: SIZE, faults: { latencyMs: 150 } });
    const sim = harness.sim;
    // Killed once two batches are committed (debug lines), however slow the machine: there is a checkpoint to resume from.
    const killed = await runCli(
      ['sync', 'contacts'],
      envFor(harness, { SALESYNC_FLUSH_ROWS: '200', LOG_LEVEL: 'debug' }),
      (kill, stdout) => {
        const timer = setInterval(() => {
          if ((stdout().match(/batch committed/g) ?? []).length >= 2) {
            clearInterval(timer);
            kill();
          }
        }, 5);
      },
    );
    expect(killed.signal).toBe('SIGKILL');
    sim.admin.clearFaults();
    sim.admin.resetStats();
    const rerun = await runCli(['sync', 'contacts'], envFor(harness));
    expect(rerun.code).toBe(0);
    // Resumed, not restarted: fewer than the 8 pages of a whole walk.
    expect(sim.admin.stats().byRoute['GET /v1/contacts/']).toBeLessThan(8);
    await expectMirrorsTruth(harness.env().warehouse, sim, { resources: ['contacts'] });
    const runs = await harness
      .env()
      .warehouse.query(`SELECT outcome, error_code, pid FROM sync_runs WHERE resource = 'contacts' ORDER BY started_at`);
    expect(runs).toEqual([
      { outcome: 'abandoned', error_code: 'run_abandoned', pid: killed.pid },
      { outcome: 'succeeded', error_code: null, pid: rerun.pid },
    ]);
  });

  it('backfill with no REDIS_URL runs here, in the foreground, to completion, and exits 0', async () => {
    harness = await startHarness({ seed: 27, size: SIZE });
    const run = await runCli(['backfill', 'companies'], envFor(harness));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['companies'] });
    const runs = await harness.env().warehouse.query(`SELECT mode, outcome FROM sync_runs WHERE resource = 'companies'`);
    expect(runs).toEqual([{ mode: 'backfill', outcome: 'succeeded' }]);
  });

  it('a record in quarantine exits 3 with one line naming records_rejected, and status shows it; the rest is written', async () => {
    harness = await startHarness({ seed: 28, size: SIZE });
    const bad = harness.sim.admin.truth().records.deals[42]!.id;
    harness.sim.admin.corruptRecord('deals', bad, 'object_property');
    const run = await runCli(['sync'], envFor(harness));
    expect(run.code).toBe(3);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^salesync: records_rejected: 1 record\(s\) of deals /);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { exclude: [bad] });
    const status = await runCli(['status', '--json'], envFor(harness));
    const parsed = JSON.parse(status.stdout) as { resources: Array<{ resource: string; rejected: number; lastRun: { outcome: string } }> };
    expect(parsed.resources.find((r) => r.resource === 'deals')).toMatchObject({
      rejected: 1,
      lastRun: { outcome: 'succeeded_with_rejects' },
    });
  });
});
