import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer, type Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli, type CliRun } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startCli } from '../jobs/helpers.js';
import { freePort } from '../support/ports.js';

/**
 * Issue 20, bounded waits: a REDIS_URL that refuses, asks for another password or never answers ends every
 * command that uses Redis within SALESYNC_REDIS_TIMEOUT, in one line `redis_unavailable` naming where it looked
 * (never the password), exit 1; the worker too, so its supervisor restarts it.
 */
/** Wait until something accepts connections on the port (the password Redis starting). */
async function listening(port: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    await sleep(50);
  }
  throw new Error(`nothing listens on ${port}`);
}

const ONE_REDIS_LINE = (address: string) =>
  new RegExp(`^salesync: redis_unavailable: could not reach Redis at ${address.replace(/[.]/g, '\\.')} \\([^\\n]+\\)\\n$`);

let harness: Harness;
let closedPort: number;
/** Accepts connections and never says a word: a host behind a firewall that drops, or not Redis at all. */
let silent: Server;
let silentPort: number;
const sockets = new Set<import('node:net').Socket>();
/** A Redis that wants a password. */
let guarded: ChildProcess;
let guardedPort: number;
const PASSWORD = 'hunter2-correct-horse';

beforeAll(async () => {
  harness = await startHarness({
    seed: 2001,
    size: { deals: 20, companies: 5, contacts: 5, meetingLogs: 2, contactActivities: 2, users: 2 },
  });
  closedPort = await freePort();
  silent = createServer((socket) => sockets.add(socket));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentPort = (silent.address() as { port: number }).port;
  guardedPort = await freePort();
  guarded = spawn('redis-server', ['--port', String(guardedPort), '--bind', '127.0.0.1', '--save', '', '--requirepass', PASSWORD], {
    stdio: 'ignore',
  });
  await listening(guardedPort);
});
afterAll(async () => {
  guarded?.kill('SIGTERM');
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((r) => silent?.close(() => r()));
  await harness?.close();
});

/** Run the CLI; one still running after 55 s (a regression: a hang) is killed, so the test fails and leaves nothing behind. */
async function timed(args: string[], env: Record<string, string>): Promise<CliRun & { ms: number }> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const run = await runCli(args, env, (kill) => {
    timer = setTimeout(kill, 55_000);
    timer.unref();
  });
  clearTimeout(timer);
  return { ...run, ms: Date.now() - started };
}

describe('a Redis that cannot be used', () => {
  it('`sync` with REDIS_URL on a closed port exits 1 within a minute with one line naming Redis (default SALESYNC_REDIS_TIMEOUT)', async () => {
    const run = await timed(['sync'], cliEnv(harness, { REDIS_URL: `redis://127.0.0.1:${closedPort}` }));
    expect(run.code, run.stderr).toBe(1);
    expect(run.ms).toBeLessThan(60_000);
    expect(run.stderr).toMatch(ONE_REDIS_LINE(`redis://127.0.0.1:${closedPort}`));
    expect(run.stderr).toMatch(/connection refused/);
    // Nothing was fetched: the walk never started without its shared limiter.
    expect(harness.sim.admin.stats().total).toBe(0);
  });

  it('`worker` with REDIS_URL on a closed port exits 1 within a minute with one line naming Redis, for its supervisor to restart it', async () => {
    const run = await timed(
      ['worker'],
      cliEnv(harness, { REDIS_URL: `redis://127.0.0.1:${closedPort}`, SALESYNC_DASHBOARD_PORT: '0', SALESYNC_METRICS_PORT: '0' }),
    );
    expect(run.code, run.stderr).toBe(1);
    expect(run.ms).toBeLessThan(60_000);
    expect(run.stderr).toMatch(ONE_REDIS_LINE(`redis://127.0.0.1:${closedPort}`));
  });

  it('every other command that uses Redis gives up the same way: reconcile, summaries, backfill queueing, schedule, status', async () => {
    await harness.sync({ resources: ['deals'] }); // status needs a warehouse
    const env = cliEnv(harness, { REDIS_URL: `redis://127.0.0.1:${closedPort}`, SALESYNC_REDIS_TIMEOUT: '2s' });
    const commands = [['reconcile', 'deals'], ['summaries'], ['backfill', 'deals'], ['schedule'], ['status']];
    // At once: each waits out its own Redis timeout, and none touches what another reads.
    const runs = await Promise.all(commands.map((args) => timed(args, env)));
    for (const [i, run] of runs.entries()) {
      const args = commands[i]!.join(' ');
      expect(run.code, `${args}: ${run.stderr}`).toBe(1);
      expect(run.stderr, args).toMatch(ONE_REDIS_LINE(`redis://127.0.0.1:${closedPort}`));
      expect(run.ms, args).toBeLessThan(20_000);
    }
  });

  it('a wrong password fails at once with one line that says so, and never prints the password', async () => {
    const wrong = 'not-the-password-42';
    const run = await timed(
      ['sync', 'deals'],
      cliEnv(harness, { REDIS_URL: `redis://:${wrong}@127.0.0.1:${guardedPort}`, SALESYNC_REDIS_TIMEOUT: '30s' }),
    );
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(ONE_REDIS_LINE(`redis://127.0.0.1:${guardedPort}`));
    expect(run.stderr).toMatch(/refused the user or password/);
    expect(run.stderr + run.stdout).not.toContain(wrong);
    // Well under the 30 s timeout: retrying a refused password cannot help.
    expect(run.ms).toBeLessThan(15_000);

    const none = await timed(
      ['schedule'],
      cliEnv(harness, { REDIS_URL: `redis://127.0.0.1:${guardedPort}`, SALESYNC_REDIS_TIMEOUT: '30s' }),
    );
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/asks for a password/);
  });

  it('a host that accepts connections and never answers: the command gives up after SALESYNC_REDIS_TIMEOUT', async () => {
    const run = await timed(
      ['sync', 'deals'],
      cliEnv(harness, { REDIS_URL: `redis://127.0.0.1:${silentPort}`, SALESYNC_REDIS_TIMEOUT: '2s' }),
    );
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(ONE_REDIS_LINE(`redis://127.0.0.1:${silentPort}`));
    expect(run.stderr).toMatch(/gave up after 2s \(SALESYNC_REDIS_TIMEOUT\)/);
    expect(run.ms).toBeLessThan(15_000);
  });

  it('a SIGTERM while it waits for Redis ends the command at once with exit 130', async () => {
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      ...cliEnv(harness, { REDIS_URL: `redis://127.0.0.1:${silentPort}`, SALESYNC_REDIS_TIMEOUT: '50s' }),
    };
    const cli = startCli(['sync', 'deals'], env);
    // Loaded and waiting on the silent port (the CLI loads in about a second).
    await sleep(3000);
    const killedAt = Date.now();
    cli.child.kill('SIGTERM');
    const code = await Promise.race([cli.exited, sleep(20_000, 'still running' as const)]);
    if (code === 'still running') cli.child.kill('SIGKILL');
    expect(code, cli.output()).toBe(130);
    expect(Date.now() - killedAt).toBeLessThan(5000);
    expect(cli.output()).toMatch(/^salesync: interrupted: stopped by SIGTERM/m);
  });
});
