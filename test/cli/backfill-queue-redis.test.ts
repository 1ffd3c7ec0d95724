/**
 * `salesync backfill <resource>` with REDIS_URL queues a job through the same bounded connection as `status` and
 * `schedule` (openRedis, brief): a Redis that never answers ends it after SALESYNC_REDIS_TIMEOUT with one
 * `redis_unavailable` line, exit 1; a Redis that answers gets the job.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openQueue } from '../../jobs/queue.js';
import { cliEnv, runCli } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';
import { useTestRedis } from '../support/use-redis.js';

const redis = useTestRedis();
let harness: Harness;
/** Accepts connections and never says a word: a firewall that drops, or not Redis at all. */
let silent: Server;
let silentPort: number;
const sockets = new Set<Socket>();

beforeAll(async () => {
  harness = await startHarness({
    seed: 3301,
    size: { deals: 5, companies: 2, contacts: 2, meetingLogs: 1, contactActivities: 1, users: 2 },
  });
  silent = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentPort = (silent.address() as { port: number }).port;
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => silent?.close(() => resolve()));
  await harness?.close();
});

describe('backfill queueing opens Redis the bounded way', () => {
  it('a Redis that accepts and never answers: one redis_unavailable line after SALESYNC_REDIS_TIMEOUT, exit 1', async () => {
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    // A regression waits for ever: killed after 30 s, so the test fails on its code instead of hanging.
    const run = await runCli(
      ['backfill', 'deals'],
      cliEnv(harness, { REDIS_URL: `redis://127.0.0.1:${silentPort}`, SALESYNC_REDIS_TIMEOUT: '2s' }),
      (kill) => {
        timer = setTimeout(kill, 30_000);
      },
    );
    clearTimeout(timer);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(
        `^salesync: redis_unavailable: could not reach Redis at redis://127\\.0\\.0\\.1:${silentPort} \\([^\\n]*gave up after 2s \\(SALESYNC_REDIS_TIMEOUT\\)\\)\\n$`,
      ),
    );
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 40_000);

  it('a Redis that answers: the job is queued for the workers', async () => {
    const prefix = `${redis.prefix}-backfill`;
    const run = await runCli(
      ['backfill', 'deals', '--since', '2025-01-01T00:00:00Z'],
      cliEnv(harness, { REDIS_URL: redis.url, REDIS_PREFIX: prefix }),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^queued: backfill of deals \(job /m);
    const queue = openQueue(redis.connect(), prefix);
    try {
      const jobs = await queue.getJobs(['waiting']);
      expect(jobs.map((j) => [j.name, j.data.resource])).toEqual([['backfill', 'deals']]);
    } finally {
      await queue.close();
    }
  });

  it('a second backfill of a resource: the same window says it is already queued; another window is refused, naming the queued one, and replaces nothing', async () => {
    const prefix = `${redis.prefix}-backfill-twice`;
    const env = cliEnv(harness, { REDIS_URL: redis.url, REDIS_PREFIX: prefix });
    const first = await runCli(['backfill', 'deals', '--since', '2024-06-01T00:00:00Z'], env);
    expect(first.code, first.stderr).toBe(0);
    const same = await runCli(['backfill', 'deals', '--since', '2024-06-01T00:00:00Z'], env);
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toMatch(/^already queued: backfill of deals \(job 1\)/m);
    const other = await runCli(['backfill', 'deals', '--since', '2020-01-01T00:00:00Z'], env);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(
      /^salesync: backfill_already_queued: a backfill of deals is already queued or running \(job 1, since 2024-06-01T00:00:00Z, until now\)[^\n]*--wait\)\n$/,
    );
    const queue = openQueue(redis.connect(), prefix);
    try {
      const jobs = await queue.getJobs(['waiting']);
      expect(jobs.map((j) => j.data)).toEqual([{ resource: 'deals', since: '2024-06-01T00:00:00Z', until: null }]);
    } finally {
      await queue.close();
    }
  });
});
