import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { openQueue } from '../../jobs/queue.js';
import { openRedis } from '../../src/redis/index.js';
import { walkLeaseGuard } from '../../src/sync/index.js';
import { emptyResult, type ResourceResult } from '../../src/sync/index.js';
import type { Warehouse } from '../../src/warehouse/types.js';
import { startHarness } from '../support/harness.js';
import { startTestRedis } from '../support/redis.js';
import { useTestRedis } from '../support/use-redis.js';
import { cliEnv, startCli, waitFor } from './helpers.js';

// Redis restarted without persistence loses every key: leases, the queue, the limiter's buckets.
const silent = pino({ level: 'silent' });
const redis = useTestRedis();

function interrupted(): ResourceResult {
  return { ...emptyResult('deals', 'incremental', 'interrupted'), pages: 1, records: 200, written: 200, requests: 2, durationMs: 10 };
}

describe('connections', () => {
  it('say nothing while a connection never became ready (its one failure says it), and never print ioredis or BullMQ errors raw on stderr', async () => {
    const warnings: string[] = [];
    const log = { warn: (_: object, message: string) => warnings.push(message), info: () => undefined };
    // Nothing listens on port 1: every attempt is refused until the timeout.
    await expect(openRedis('redis://127.0.0.1:1', { timeoutMs: 500, log })).rejects.toMatchObject({ code: 'redis_unavailable' });
    expect(warnings).toEqual([]);
    // An 'error' event nobody listens to is what BullMQ prints on stderr (a connection's own: redis-connection.test.ts).
    const queue = openQueue(redis.connect(), `${redis.prefix}-errors`);
    expect(queue.listenerCount('error')).toBeGreaterThan(0);
    await queue.close();
  });
});

describe('walk lease', () => {
  it('a walk stopped because Redis lost its lease ends with walk_lease_lost, not as a clean interruption', async () => {
    const client = redis.connect();
    const guard = walkLeaseGuard({
      redis: client,
      prefix: `${redis.prefix}-walk`,
      warehouse: { path: '/tmp/w.duckdb' } as Warehouse,
      logger: silent,
      ttlMs: 300,
      waitMs: 0,
    });
    const lost = guard('deals', 'incremental', async (signal) => {
      await redis.restart();
      // The next renewal (every ttl / 3) finds the lease gone and aborts the walk, which stops like any interruption.
      // On a busy machine that may come before the restart returns: an abort already fired fires no event.
      if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      return interrupted();
    });
    const result = await lost;
    expect(result.outcome).toBe('interrupted');
    expect(result.error?.code).toBe('walk_lease_lost');
    expect(result.error?.disposition).toBe('retriable');
    expect(result.error?.message).toMatch(/^lost the lease on walking deals \(Redis lost it/);

    // Stopped by its own caller (a shutdown), with the lease held: an interruption, not an error.
    const stopped = await guard('deals', 'incremental', async () => interrupted());
    expect(stopped.error).toBeUndefined();
  });
});

describe('worker and a Redis restart', () => {
  it('a worker stopped while Redis restarts exits within seconds instead of waiting forever for BullMQ', async () => {
    // Rate-limited meeting logs (one GET per log) keep the job running while Redis goes away.
    const harness = await startHarness({ size: { meetingLogs: 300 }, perKeyPerMinute: 1200 });
    const prefix = `${redis.prefix}-worker`;
    const env = cliEnv(harness.url, harness.config.warehousePath, redis.url, prefix, {
      SALES_API_RATE_LIMIT: '1200',
      SALESYNC_LEASE_TTL: '3s',
    });
    const queue = openQueue(redis.connect(), prefix);
    await queue.add('sync', { resource: 'meeting-logs', mode: 'incremental' });
    const worker = startCli(['worker'], env);
    await waitFor(
      async () => (await queue.getJobs(['active'])).length,
      (n) => n > 0,
      30_000,
      'the job to start',
    );
    await queue.close();

    // SIGTERM while Redis is down: BullMQ's close then finds its blocking connection reconnecting and never ends.
    const restarted = redis.restart();
    await sleep(20);
    worker.child.kill('SIGTERM');
    await restarted;
    const code = await Promise.race([worker.exited, sleep(20_000, 'still running' as const)]);
    if (code === 'still running') worker.child.kill('SIGKILL');
    expect(code, worker.output()).not.toBe('still running');
    // 0 when its leases survived the restart's timing, else the one line naming the lost lease.
    if (code !== 0) expect(worker.output()).toMatch(/^salesync: worker_lease_lost: lost the lease on .+$/m);
    await harness.close();
  }, 60_000);
});

describe('worker and a Redis that goes for good', () => {
  it('a worker whose Redis stays away longer than SALESYNC_REDIS_TIMEOUT exits 1 with one redis_unavailable line, for its supervisor to restart it', async () => {
    // A server of this test's own, stopped and never started again.
    const gone = await startTestRedis();
    expect(gone.owned, 'needs redis-server on PATH, to stop it').toBe(true);
    const harness = await startHarness({ size: { deals: 5, companies: 2, contacts: 2, meetingLogs: 1, contactActivities: 1, users: 2 } });
    const env = cliEnv(harness.url, harness.config.warehousePath, gone.url, `${gone.prefix}-gone`, { SALESYNC_REDIS_TIMEOUT: '2s' });
    const worker = startCli(['worker'], env);
    let stderr = '';
    worker.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    let stopped = false;
    try {
      await waitFor(
        async () => worker.output(),
        (output) => output.includes('"msg":"worker started"'),
        30_000,
        'the worker to start',
      );
      const stoppedAt = Date.now();
      stopped = true;
      await gone.stop();
      const code = await Promise.race([worker.exited, sleep(30_000, 'still running' as const)]);
      const took = Date.now() - stoppedAt;
      expect(code, worker.output()).toBe(1);
      // It rode out the first 2 s (a restart would have been survived), then gave up.
      expect(took).toBeGreaterThanOrEqual(2000);
      expect(took).toBeLessThan(15_000);
      expect(stderr).toMatch(
        new RegExp(
          `^salesync: redis_unavailable: could not reach Redis at ${gone.url.replace(/[.]/g, '\\.')} \\(lost the connection, then connection refused[^\\n]*; gave up after [0-9.]+s \\(SALESYNC_REDIS_TIMEOUT\\)\\)\\n$`,
        ),
      );
    } finally {
      if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
      if (!stopped) await gone.stop();
      await harness.close();
    }
  }, 60_000);

  it('a sync whose Redis goes away for good mid-walk commits what it fetched and exits 1 with one redis_unavailable line, soon after SALESYNC_REDIS_TIMEOUT', async () => {
    const gone = await startTestRedis();
    expect(gone.owned, 'needs redis-server on PATH, to stop it').toBe(true);
    // Slow answers: the walk is still under way when Redis goes.
    const harness = await startHarness({
      seed: 5,
      size: { deals: 3000, companies: 2, contacts: 2, meetingLogs: 1, contactActivities: 1, users: 2 },
      faults: { latencyMs: 600 },
    });
    const env = cliEnv(harness.url, harness.config.warehousePath, gone.url, `${gone.prefix}-sync`, {
      SALESYNC_REDIS_TIMEOUT: '2s',
      SALESYNC_FLUSH_ROWS: '200',
    });
    const sync = startCli(['sync', 'deals'], env);
    let stderr = '';
    sync.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      await waitFor(
        async () => sync.output(),
        (output) => output.includes('"msg":"walk started"'),
        30_000,
        'the walk to start',
      );
      await sleep(1500);
      const stoppedAt = Date.now();
      await gone.stop();
      const code = await Promise.race([sync.exited, sleep(30_000, 'still running' as const)]);
      const took = Date.now() - stoppedAt;
      expect(code, sync.output()).toBe(1);
      expect(took).toBeLessThan(15_000);
      expect(stderr).toMatch(
        new RegExp(`^salesync: redis_unavailable: could not reach Redis at ${gone.url.replace(/[.]/g, '\\.')}[^\\n]*\\n$`),
      );
      // What was fetched before is kept: the rerun resumes (checked by its watermark-free checkpoint).
      const { walk } = await harness.env().warehouse.readState('deals');
      expect(walk?.cursor ?? null).not.toBeNull();
    } finally {
      if (sync.child.exitCode === null) sync.child.kill('SIGKILL');
      await gone.stop();
      await harness.close();
    }
  }, 60_000);
});
