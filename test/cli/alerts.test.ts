import { createServer, type IncomingMessage, type Server } from 'node:http';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT_UNHEALTHY } from '../../src/cli/health-check.js';
import { cliEnv, runCli } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';

/** Issue 20, part 4: alerts that work from cron. `status --check`, the metrics textfile, the alert webhook. */
let harness: Harness | undefined;
let hook: { server: Server; url: string; posts: Array<{ headers: IncomingMessage['headers']; body: Record<string, unknown> }> } | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  if (hook) await new Promise<void>((r) => hook!.server.close(() => r()));
  hook = undefined;
});

const SIZE = { deals: 60, companies: 10, contacts: 20, meetingLogs: 3, contactActivities: 5, users: 3 };
const WRONG_KEY = `sk_${'Q'.repeat(20)}${'7'.repeat(24)}`;

/**
 * A companies walk that fails after the connection check: once the first deals page is served, every request
 * answers 500 (no retries), so the companies walk started next is recorded `failed` in sync_runs.
 */
async function failNextCompaniesWalk(h: Harness, extra: Record<string, string> = {}): Promise<void> {
  h.sim.admin.setOnListPage((event) => {
    if (event.resource === 'deals') event.admin.setFaults({ errorRate: 1 });
  });
  const run = await runCli(['sync', 'deals', 'companies', '--concurrency', '1'], cliEnv(h, { SALES_API_RETRIES: '0', ...extra }));
  expect(run.code, run.stderr).toBe(1);
  h.sim.admin.setOnListPage(null);
  h.sim.admin.clearFaults();
}

/** A local webhook receiver answering `status` to every POST. */
async function startHook(status = 204): Promise<NonNullable<typeof hook>> {
  const posts: NonNullable<typeof hook>['posts'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      posts.push({ headers: req.headers, body: JSON.parse(body) as Record<string, unknown> });
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  hook = { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks/salesync?token=abc`, posts };
  return hook;
}

describe('status --check', () => {
  it('exits 0 and prints nothing when every resource is fresh; exits 4 with one line per stale resource past --max-age', async () => {
    harness = await startHarness({ seed: 2401, size: SIZE });
    expect((await runCli(['sync'], cliEnv(harness))).code).toBe(0);

    const healthy = await runCli(['status', '--check', '--max-age', '1h'], cliEnv(harness));
    expect(healthy.code, healthy.stderr + healthy.stdout).toBe(0);
    expect(healthy.stdout).toBe('');
    expect(healthy.stderr).toBe('');

    const stale = await runCli(['status', '--check', '--max-age', '1ms', '--max-age', 'users=off'], cliEnv(harness));
    expect(stale.code).toBe(EXIT_UNHEALTHY);
    const lines = stale.stdout.trim().split('\n');
    expect(lines).toHaveLength(5);
    for (const line of lines)
      expect(line).toMatch(
        /^(deals|companies|contacts|meeting-logs|contact-activities): stale: last completed walk .* ago, more than the 1ms allowed/,
      );
    expect(stale.stderr).toMatch(/^salesync: check_failed: 5 problems found \(deals stale, /);
    expect(stale.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 4 when the last run failed, and when records are in quarantine; --json prints the same facts', async () => {
    harness = await startHarness({ seed: 2402, size: SIZE });
    const bad = harness.sim.admin.truth().records.deals[7]!.id;
    harness.sim.admin.corruptRecord('deals', bad, 'object_property');
    expect((await runCli(['sync'], cliEnv(harness))).code).toBe(3);
    await failNextCompaniesWalk(harness);

    const check = await runCli(['status', '--check', '--max-age', '1h'], cliEnv(harness));
    expect(check.code).toBe(EXIT_UNHEALTHY);
    expect(check.stdout).toMatch(
      /^companies: failed: the last incremental run \(started .*\) did not complete: it failed with [a-z_]+; see sync_runs/m,
    );
    expect(check.stdout).toMatch(/^deals: quarantine: 1 record in quarantine/m);
    expect(check.stdout.trim().split('\n')).toHaveLength(2);

    const json = await runCli(['status', '--json', '--max-age', '1h'], cliEnv(harness));
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as {
      healthy: boolean;
      problems: Array<{ resource: string; kind: string }>;
      resources: Array<{ resource: string; freshnessMs: number; rejected: number }>;
    };
    expect(parsed.healthy).toBe(false);
    expect(parsed.problems.map((p) => `${p.resource} ${p.kind}`)).toEqual(['deals quarantine', 'companies failed']);
    for (const r of parsed.resources) expect(r.freshnessMs).toBeGreaterThanOrEqual(0);
  });
});

describe('metrics textfile (SALESYNC_METRICS_TEXTFILE)', () => {
  it('after a CLI sync holds freshness, rows, quarantine and the last runs (records, 429s, drift, outcome), written atomically', async () => {
    harness = await startHarness({ seed: 2403, size: SIZE });
    const textfile = join(harness.dir, 'salesync.prom');
    const env = cliEnv(harness, { SALESYNC_METRICS_TEXTFILE: textfile });
    const sync = await runCli(['sync'], env);
    expect(sync.code, sync.stderr).toBe(0);
    const text = await readFile(textfile, 'utf8');
    expect(text).toMatch(/^# TYPE salesync_resource_age_seconds gauge$/m);
    expect(text).toMatch(/^salesync_resource_age_seconds\{resource="deals"\} \d/m);
    expect(text).toMatch(/^salesync_resource_last_completed_timestamp_seconds\{resource="deals"\} \d{10}/m);
    expect(text).toMatch(/^salesync_resource_rows\{resource="deals"\} 60$/m);
    expect(text).toMatch(/^salesync_rejected_records\{resource="deals"\} 0$/m);
    expect(text).toMatch(/^salesync_last_run_records\{resource="contacts",mode="incremental"\} 20$/m);
    expect(text).toMatch(/^salesync_last_run_rate_limited\{resource="deals",mode="incremental"\} 0$/m);
    expect(text).toMatch(/^salesync_last_run_failed\{resource="deals",mode="incremental"\} 0$/m);
    expect(text).toMatch(/^salesync_cli_last_run_exit_code\{command="sync"\} 0$/m);
    expect(text).toMatch(/^salesync_cli_last_run_success\{command="sync"\} 1$/m);

    // A reconcile after it: its drift and deletions appear, and the sync's own lines stay (one file for every command).
    harness.sim.admin.deleteRecord('deals', harness.sim.admin.truth().records.deals[3]!.id);
    const reconcile = await runCli(['reconcile', 'deals'], env);
    expect(reconcile.code, reconcile.stderr).toBe(0);
    const after = await readFile(textfile, 'utf8');
    expect(after).toMatch(/^salesync_last_run_deleted\{resource="deals",mode="reconcile"\} 1$/m);
    expect(after).toMatch(/^salesync_last_run_drift\{resource="deals",mode="reconcile"\} \d+$/m);
    expect(after).toMatch(/^salesync_cli_last_run_success\{command="sync"\} 1$/m);
    expect(after).toMatch(/^salesync_cli_last_run_success\{command="reconcile"\} 1$/m);
    expect((after.match(/^# TYPE salesync_cli_last_run_success gauge$/gm) ?? []).length).toBe(1);
    expect((await readdir(harness.dir)).filter((f) => f.includes('.prom.'))).toEqual([]);

    // A failed run is in it too.
    const failed = await runCli(['sync', 'users'], cliEnv(harness, { SALESYNC_METRICS_TEXTFILE: textfile, SALES_API_KEY: WRONG_KEY }));
    expect(failed.code).toBe(1);
    const last = await readFile(textfile, 'utf8');
    expect(last).toMatch(/^salesync_cli_last_run_exit_code\{command="sync"\} 1$/m);
    expect(last).toMatch(/^salesync_cli_last_run_success\{command="sync"\} 0$/m);
    await failNextCompaniesWalk(harness, { SALESYNC_METRICS_TEXTFILE: textfile });
    expect(await readFile(textfile, 'utf8')).toMatch(/^salesync_last_run_failed\{resource="companies",mode="incremental"\} 1$/m);
  });
});

describe('alert webhook (SALESYNC_ALERT_URL)', () => {
  it('receives one JSON POST when a CLI run fails, and none when it succeeds', async () => {
    harness = await startHarness({ seed: 2404, size: SIZE });
    const { url, posts } = await startHook();
    const ok = await runCli(['sync', 'companies'], cliEnv(harness, { SALESYNC_ALERT_URL: url }));
    expect(ok.code).toBe(0);
    expect(posts).toEqual([]);

    const failed = await runCli(['sync', 'companies'], cliEnv(harness, { SALESYNC_ALERT_URL: url, SALES_API_KEY: WRONG_KEY }));
    expect(failed.code).toBe(1);
    expect(failed.stderr.trim().split('\n')).toHaveLength(1);
    expect(posts).toHaveLength(1);
    expect(posts[0]!.headers['content-type']).toBe('application/json');
    expect(posts[0]!.body).toMatchObject({
      source: 'salesync',
      event: 'run_failed',
      command: 'sync',
      code: 'unauthorized',
      exitCode: 1,
      warehouse: harness.config.warehousePath,
      problems: [],
    });
    expect(String(posts[0]!.body.text)).toMatch(/^salesync sync failed on .+: unauthorized: /);
    expect(JSON.stringify(posts[0]!.body)).not.toContain(WRONG_KEY);
  });

  it('receives the problems when status --check finds one', async () => {
    harness = await startHarness({ seed: 2405, size: SIZE });
    const { url, posts } = await startHook();
    expect((await runCli(['sync', 'deals'], cliEnv(harness))).code).toBe(0);
    const check = await runCli(
      ['status', '--check', '--max-age', '1h', '--max-age', 'deals=1ms'],
      cliEnv(harness, { SALESYNC_ALERT_URL: url }),
    );
    expect(check.code).toBe(EXIT_UNHEALTHY);
    expect(posts).toHaveLength(1);
    expect(posts[0]!.body).toMatchObject({ event: 'check_failed', command: 'status', code: 'check_failed', exitCode: EXIT_UNHEALTHY });
    const problems = posts[0]!.body.problems as Array<{ resource: string; kind: string }>;
    expect(problems.find((p) => p.resource === 'deals')).toMatchObject({ kind: 'stale' });
    expect(problems.filter((p) => p.kind === 'never_completed')).toHaveLength(5);
  });

  it('a failing or unreachable webhook never changes the exit code: a warning in the log, the URL never printed', async () => {
    harness = await startHarness({ seed: 2406, size: SIZE });
    const { url, posts } = await startHook(500);
    const failed = await runCli(['sync', 'companies'], cliEnv(harness, { SALESYNC_ALERT_URL: url, SALES_API_KEY: WRONG_KEY }));
    expect(failed.code).toBe(1);
    expect(posts).toHaveLength(1);
    expect(failed.stdout).toMatch(/"reason":"HTTP 500".*could not deliver the alert to SALESYNC_ALERT_URL/);
    expect(failed.stdout + failed.stderr).not.toContain('token=abc');

    const unreachable = await runCli(
      ['sync', 'companies'],
      cliEnv(harness, { SALESYNC_ALERT_URL: 'http://127.0.0.1:1/hook', SALES_API_KEY: WRONG_KEY }),
    );
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr.trim().split('\n')).toHaveLength(1);
    expect(unreachable.stdout).toMatch(/could not deliver the alert/);

    // A successful run is not changed by a broken webhook either.
    const ok = await runCli(['sync', 'companies'], cliEnv(harness, { SALESYNC_ALERT_URL: 'http://127.0.0.1:1/hook' }));
    expect(ok.code).toBe(0);
  });
});
