import { createServer, connect, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { startCli, type CliProcess } from '../jobs/helpers.js';

/**
 * A Redis that keeps its connections open and stops answering (a process stopped with SIGSTOP, a stalled host):
 * no socket closes, so nothing but salesync's own watch can tell. Commands and the worker must still end, within
 * SALESYNC_REDIS_TIMEOUT, with one line naming Redis.
 */

/** A proxy to Redis that, once frozen, passes nothing either way and keeps every connection open. */
interface FreezingProxy {
  url: string;
  freeze(): void;
  close(): Promise<void>;
}

async function freezingProxy(target: URL): Promise<FreezingProxy> {
  let frozen = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.on('data', (data) => frozen || upstream.write(data));
    upstream.on('data', (data) => frozen || client.write(data));
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    freeze: () => (frozen = true),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let harness: Harness;
let redis: TestRedis;
let proxy: FreezingProxy | undefined;
let cli: CliProcess | undefined;

beforeAll(async () => {
  redis = await startTestRedis();
  // Enough pages at a slow rate that the run is under way when Redis freezes.
  harness = await startHarness({
    seed: 2002,
    size: { deals: 1000, companies: 5, contacts: 5, meetingLogs: 2, contactActivities: 2, users: 2 },
  });
});
afterEach(async () => {
  if (cli && cli.child.exitCode === null) cli.child.kill('SIGKILL');
  cli = undefined;
  await proxy?.close();
  proxy = undefined;
});
afterAll(async () => {
  await harness?.close();
  await redis?.stop();
});

/** Run the CLI against the proxy; freeze Redis once `running` says the run is under way. */
async function frozenMidRun(
  args: string[],
  extra: Record<string, string>,
  running: (output: string) => boolean,
): Promise<{ code: number | null | 'still running'; output: string; ms: number }> {
  proxy = await freezingProxy(new URL(redis.url));
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    ...cliEnv(harness, { REDIS_URL: proxy.url, SALESYNC_REDIS_TIMEOUT: '2s', SALES_API_RATE_LIMIT: '60', LOG_LEVEL: 'warn', ...extra }),
  };
  const started = startCli(args, env);
  cli = started;
  for (let waited = 0; !running(started.output()) && waited < 30_000; waited += 100) await sleep(100);
  proxy.freeze();
  const frozenAt = Date.now();
  const code = await Promise.race([started.exited, sleep(30_000, 'still running' as const)]);
  return { code, output: started.output(), ms: Date.now() - frozenAt };
}

describe('a Redis that stops answering mid-run', () => {
  it('`sync` ends with exit 1 and one redis_unavailable line within seconds of SALESYNC_REDIS_TIMEOUT, not never', async () => {
    // Connected and walking: the service has answered a page of deals.
    harness.sim.admin.resetStats();
    const run = await frozenMidRun(['sync', 'deals'], {}, () => (harness.sim.admin.stats().byRoute['GET /v1/deals/'] ?? 0) > 0);
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/^salesync: redis_unavailable: could not reach Redis at redis:\/\/127\.0\.0\.1:\d+ \(it stopped answering/m);
    expect(run.ms).toBeLessThan(20_000);
  });

  it('the worker stops with exit 1, for its supervisor to restart it', async () => {
    const run = await frozenMidRun(['worker'], { SALESYNC_DASHBOARD_PORT: '0', SALESYNC_METRICS_PORT: '0', LOG_LEVEL: 'info' }, (output) =>
      output.includes('worker started'),
    );
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/redis_unavailable/);
    expect(run.ms).toBeLessThan(20_000);
  });
});
