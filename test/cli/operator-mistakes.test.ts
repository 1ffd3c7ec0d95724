import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli, type CliRun } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';
import { useTestRedis } from '../support/use-redis.js';

/**
 * Issue 20, part 3: every mistake an operator can make is one line `salesync: <code>: <what to do>`, exit 2 for
 * configuration, and no library's own message reaches them unexplained.
 */
const redis = useTestRedis();
let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({
    seed: 2201,
    size: { deals: 10, companies: 3, contacts: 3, meetingLogs: 1, contactActivities: 1, users: 2 },
  });
});
afterAll(async () => {
  await harness?.close();
});

function expectOneLine(run: CliRun, code: string, exit = 2): void {
  expect(run.code, run.stderr).toBe(exit);
  expect(run.stderr.trim().split('\n'), run.stderr).toHaveLength(1);
  expect(run.stderr).toMatch(new RegExp(`^salesync: ${code}: `));
}

async function occupiedPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, server };
}

async function schedulerKeys(prefix: string): Promise<string[]> {
  const client = redis.connect();
  return client.keys(`${prefix}:*`);
}

describe('operator mistakes', () => {
  it('LOG_LEVEL=verbose is invalid_config naming LOG_LEVEL and the levels it takes', async () => {
    const run = await runCli(['sync'], cliEnv(harness, { LOG_LEVEL: 'verbose' }));
    expectOneLine(run, 'invalid_config');
    expect(run.stderr).toMatch(/LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent \(got "verbose"\)/);
    expect(harness.sim.admin.stats().total).toBe(0);
  });

  it('--log-level verbose is invalid_option naming the flag', async () => {
    const run = await runCli(['--log-level', 'verbose', 'status'], cliEnv(harness));
    expectOneLine(run, 'invalid_option');
    expect(run.stderr).toMatch(/--log-level must be one of trace, debug/);
  });

  it('--concurrency abc is invalid_option, exit 2, naming the option, without the help', async () => {
    const run = await runCli(['sync', '--concurrency', 'abc'], cliEnv(harness));
    expectOneLine(run, 'invalid_option');
    expect(run.stderr).toMatch(/--concurrency must be a whole number of at least 1, such as 3 \(got "abc"\)/);
    expect(run.stdout).toBe('');
  });

  it('an unknown option or command is one line with exit 2', async () => {
    expectOneLine(await runCli(['sync', '--fulll'], cliEnv(harness)), 'unknown_option');
    expectOneLine(await runCli(['synk'], cliEnv(harness)), 'unknown_command');
  });

  it('a key pasted into an option is never echoed', async () => {
    const key = `sk_${'A'.repeat(44)}`;
    const run = await runCli(['worker', '--concurrency', key], cliEnv(harness));
    expectOneLine(run, 'invalid_option');
    expect(run.stderr).not.toContain(key);
  });

  it('schedule --timezone Mars/Olympus is invalid_timezone, and nothing is registered (not even --sync-every)', async () => {
    const prefix = `${redis.prefix}-tz`;
    const run = await runCli(
      ['schedule', '--sync-every', '5m', '--timezone', 'Mars/Olympus'],
      cliEnv(harness, { REDIS_URL: redis.url, REDIS_PREFIX: prefix }),
    );
    expectOneLine(run, 'invalid_timezone');
    expect(run.stderr).toMatch(/unknown time zone "Mars\/Olympus" \(--timezone or SALESYNC_TIMEZONE\): use an IANA name/);
    expect(await schedulerKeys(prefix)).toEqual([]);
  });

  it('schedule --list --remove, or --remove with a schedule setting, is invalid_option, and the schedules stay', async () => {
    const prefix = `${redis.prefix}-list-remove`;
    const env = cliEnv(harness, { REDIS_URL: redis.url, REDIS_PREFIX: prefix });
    expect((await runCli(['schedule'], env)).code).toBe(0);
    const registered = await schedulerKeys(prefix);
    expect(registered.length).toBeGreaterThan(0);
    expectOneLine(await runCli(['schedule', '--list', '--remove'], env), 'invalid_option');
    const mixed = await runCli(['schedule', '--remove', '--sync-every', '5m'], env);
    expectOneLine(mixed, 'invalid_option');
    expect(mixed.stderr).toMatch(/--remove takes no schedule setting \(got --sync-every\)/);
    expect((await schedulerKeys(prefix)).sort()).toEqual(registered.sort());
  });

  it('a bad --reconcile-cron is invalid_cron, and nothing is registered', async () => {
    const prefix = `${redis.prefix}-cron`;
    const run = await runCli(
      ['schedule', '--reconcile-cron', '0 99 * * *'],
      cliEnv(harness, { REDIS_URL: redis.url, REDIS_PREFIX: prefix }),
    );
    expectOneLine(run, 'invalid_cron');
    expect(run.stderr).toMatch(
      /invalid cron pattern "0 99 \* \* \*" \(--reconcile-cron or SALESYNC_RECONCILE_CRON\): .*expected range 0-23; use five fields/,
    );
    expect(await schedulerKeys(prefix)).toEqual([]);
    const deep = await runCli(
      ['schedule', '--deep-reconcile-cron', 'weekly'],
      cliEnv(harness, { REDIS_URL: redis.url, REDIS_PREFIX: prefix }),
    );
    expectOneLine(deep, 'invalid_cron');
    const short = await runCli(['schedule', '--reconcile-cron', '0'], cliEnv(harness, { REDIS_URL: redis.url, REDIS_PREFIX: prefix }));
    expectOneLine(short, 'invalid_cron');
    expect(short.stderr).toMatch(/invalid cron pattern "0" .*: it has 1 field; use five fields/);
    expect(deep.stderr).toMatch(/invalid cron pattern "weekly" \(--deep-reconcile-cron or SALESYNC_DEEP_RECONCILE_CRON\)/);
    expect(await schedulerKeys(prefix)).toEqual([]);

    // The same schedule with a valid pattern registers all thirteen.
    const ok = await runCli(
      ['schedule', '--reconcile-cron', '0 4 * * *', '--timezone', 'Asia/Tokyo', '--json'],
      cliEnv(harness, { REDIS_URL: redis.url, REDIS_PREFIX: prefix, LOG_LEVEL: 'warn' }),
    );
    expect(ok.code, ok.stderr).toBe(0);
    expect((JSON.parse(ok.stdout) as unknown[]).length).toBe(13);
  });

  it('schedule with no Redis reachable is redis_unavailable (exit 1: not configuration)', async () => {
    const { port, server } = await occupiedPort();
    await new Promise<void>((r) => server.close(() => r()));
    const run = await runCli(['schedule'], cliEnv(harness, { REDIS_URL: `redis://127.0.0.1:${port}`, SALESYNC_REDIS_TIMEOUT: '2s' }));
    expectOneLine(run, 'redis_unavailable', 1);
    expect(run.stderr).toContain(`redis://127.0.0.1:${port}`);
  });

  it('a dashboard port in use is port_in_use naming --dashboard-port and SALESYNC_DASHBOARD_PORT, before the worker takes any job', async () => {
    const { port, server } = await occupiedPort();
    try {
      const run = await runCli(
        ['worker'],
        cliEnv(harness, {
          REDIS_URL: redis.url,
          REDIS_PREFIX: `${redis.prefix}-port`,
          SALESYNC_DASHBOARD_PORT: String(port),
          SALESYNC_METRICS_PORT: '0',
        }),
      );
      expectOneLine(run, 'port_in_use');
      expect(run.stderr).toMatch(
        new RegExp(
          `port ${port} on 127\\.0\\.0\\.1 is already in use, so bull-board cannot listen: choose another with --dashboard-port or SALESYNC_DASHBOARD_PORT`,
        ),
      );
      // It failed before taking the warehouse lease.
      expect((await schedulerKeys(`${redis.prefix}-port`)).filter((k) => k.includes(':lease:'))).toEqual([]);

      const metrics = await runCli(
        ['worker', '--metrics-port', String(port), '--dashboard-port', '0'],
        cliEnv(harness, { REDIS_URL: redis.url, REDIS_PREFIX: `${redis.prefix}-port` }),
      );
      expectOneLine(metrics, 'port_in_use');
      expect(metrics.stderr).toMatch(/--metrics-port or SALESYNC_METRICS_PORT/);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('an output path that cannot be written (a file where a directory goes, a directory where a file goes, a missing or read-only parent) is invalid_output_path', async () => {
    const env = cliEnv(harness);
    expect((await runCli(['sync'], env)).code).toBe(0);
    const dir = await mkdtemp(join(tmpdir(), 'salesync-out-'));
    try {
      const file = join(dir, 'a-file');
      await writeFile(file, 'x');
      const readOnly = join(dir, 'read-only');
      await mkdir(readOnly, { mode: 0o500 });
      const cases: Array<[string[], string]> = [
        [['export', '--out', file], '--out'],
        [['export', '--out', join(file, 'below')], '--out'],
        [['changes', '--since', '0', '--output', join(dir, 'missing', 'changes.ndjson')], '--output'],
        [['changes', '--since', '0', '--output', dir], '--output'],
        [['dbt-sources', '--out', dir], '--out'],
        [['dbt-sources', '--out', join(file, 'sources.yml')], '--out'],
      ];
      // Root may write anywhere: the read-only directory refuses only others.
      if (process.getuid?.() !== 0) cases.push([['export', '--out', readOnly], '--out']);
      // Where no entry can be made: Node's recursive mkdir retried this for ever (as root).
      if (process.platform === 'linux') cases.push([['export', '--out', '/proc/salesync-export'], '--out']);
      for (const [args, option] of cases) {
        const run = await runCli(args, env);
        expectOneLine(run, 'invalid_output_path');
        expect(run.stderr, args.join(' ')).toContain(option);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a WAREHOUSE_PATH that is a text file or a directory is warehouse_not_duckdb, for a sync and a query, and nothing is written', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'salesync-not-duckdb-'));
    try {
      const text = join(dir, 'notes.duckdb');
      await writeFile(text, 'not a database');
      const folder = join(dir, 'folder.duckdb');
      await mkdir(folder);
      for (const path of [text, folder]) {
        for (const args of [
          ['sync', 'users'],
          ['query', 'SELECT 1'],
        ]) {
          const run = await runCli(args, cliEnv(harness, { WAREHOUSE_PATH: path }));
          expectOneLine(run, 'warehouse_not_duckdb');
          expect(run.stderr).toMatch(/point WAREHOUSE_PATH at a warehouse salesync wrote/);
        }
      }
      expect(await readFile(text, 'utf8')).toBe('not a database');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a SALESYNC_PUBLISH_GROUP this host does not know is invalid_config before any record is fetched', async () => {
    for (const group of ['no-such-group-here', '99999999999']) {
      harness.sim.admin.resetStats();
      const run = await runCli(['sync'], cliEnv(harness, { SALESYNC_PUBLISH_GROUP: group }));
      expectOneLine(run, 'invalid_config');
      expect(run.stderr).toMatch(/SALESYNC_PUBLISH_GROUP .*; set it to a group name or gid of this host/);
      expect(harness.sim.admin.stats().byRoute['GET /v1/deals/'] ?? 0).toBe(0);
    }
  });

  it('reconcile --deep of resources without single views to re-read (users, deals) is invalid_option', async () => {
    for (const resource of ['users', 'deals']) {
      const run = await runCli(['reconcile', resource, '--deep'], cliEnv(harness));
      expectOneLine(run, 'invalid_option');
      expect(run.stderr).toMatch(/add meeting-logs, or drop --deep/);
    }
  });

  it('a simulator port in use is port_in_use naming --port', async () => {
    const { port, server } = await occupiedPort();
    try {
      const run = await runCli(['simulator', '--port', String(port), '--host', '127.0.0.1'], {});
      expectOneLine(run, 'port_in_use');
      expect(run.stderr).toMatch(/--port/);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
