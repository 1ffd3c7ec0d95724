import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openQueue } from '../../jobs/queue.js';
import { RESOURCE_NAMES } from '../../src/core/resources.js';
import { createWarehouse } from '../../src/sync/index.js';
import { cliEnv as workerEnv, pendingJobs, startCli, waitFor } from '../jobs/helpers.js';
import { cliEnv, runCli, type CliRun } from '../support/cli.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { chaosReport, chaosTrials, seededRandom } from './chaos-settings.js';

/**
 * Redis restarted mid-run. The test's redis-server keeps nothing on disk, like a Redis without persistence: the
 * limiter's buckets, the leases, the queue and the schedules all vanish. Whatever the moment, the run must end
 * (completed, or failed with one line naming the cause) within a bound, and the next run must leave the warehouse
 * equal to the truth.
 */
const SIZE = { deals: 400, companies: 100, contacts: 400, meetingLogs: 40, contactActivities: 200, users: 10 };
/**
 * The service's real per-key limit, scaled so that a first sync (about 55 requests) is paced by the limiter for a
 * few seconds: long enough for a restart to land mid-run. Each trial's traffic stays far below the limit over
 * any 60 s window even with the one extra burst a forgotten bucket grants, so every 429 would be a limiter fault.
 */
const PER_KEY_PER_MINUTE = 1200;
/** Short leases, renewed every ttl / 3, so a run of a few seconds notices that Redis lost them. */
const LEASE_TTL = '1s';
/** The bound on a run that meets a restart: a hang fails the trial instead of the whole suite's timeout. */
const RUN_BOUND_MS = 30_000;
const ONE_LINE_FAILURE = /^salesync: [a-z_]+: [^\n]+\n?$/;
const silent = pino({ level: 'silent' });

let redis: TestRedis;
let harness: Harness | undefined;
beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(async () => {
  await harness?.close();
  await redis.stop();
});

describe('Redis restarted mid-run', () => {
  it('a sync on the shared limiter either completes or fails in one line, never hangs, and the next sync is exact, with no 429', async () => {
    harness = await startHarness({ seed: 401, size: SIZE, faults: { latencyMs: 3 }, perKeyPerMinute: PER_KEY_PER_MINUTE });
    const sim = harness.sim;
    const random = seededRandom(401);
    const trials = chaosTrials();
    const outcomes: Record<string, number> = {};
    let restartedMidRun = 0;
    let requests = 0;
    let rateLimited = 0;
    for (let trial = 0; trial < trials; trial++) {
      const warehousePath = join(harness.dir, `sync-${trial}.duckdb`);
      const env = cliEnv(harness, {
        WAREHOUSE_PATH: warehousePath,
        REDIS_URL: redis.url,
        REDIS_PREFIX: redis.prefix,
        SALES_API_RATE_LIMIT: String(PER_KEY_PER_MINUTE),
        SALESYNC_FLUSH_ROWS: '200',
        SALESYNC_LEASE_TTL: LEASE_TTL,
      });
      const restartAfterMs = 300 + Math.floor(random() * 3000);
      sim.admin.resetStats();
      let restart: Promise<void> | undefined;
      let restartTimer: NodeJS.Timeout | undefined;
      const first = await runCli(['sync'], env, (kill) => {
        restartTimer = setTimeout(() => {
          restartedMidRun += 1;
          restart = redis.restart();
        }, restartAfterMs);
        setTimeout(kill, RUN_BOUND_MS).unref();
      });
      // A run that ended first is not restarted under (nor its rerun, which needs Redis up).
      clearTimeout(restartTimer);
      await restart;
      expect(first.signal, `sync still running ${RUN_BOUND_MS} ms after a Redis restart:\n${first.stdout}`).toBeNull();
      expectCompletedOrOneLine(first);
      tally(outcomes, first);

      sim.admin.mutateRandom(10, 5000 + trial, ['update', 'same-value', 'create', 'activity']);
      const rerun = await runCli(['sync'], env);
      expect(rerun.code, rerun.stderr).toBe(0);
      await expectMirrorsTruth(createWarehouse({ ...harness.config, warehousePath }, silent), sim);
      const stats = sim.admin.stats();
      requests += stats.total;
      rateLimited += stats.rateLimited;
    }
    chaosReport('Redis restarted during a sync', {
      trials,
      restartedMidRun,
      ...outcomes,
      requests,
      rateLimited429: rateLimited,
    });
    expect(rateLimited).toBe(0);
    expect(restartedMidRun).toBeGreaterThan(trials / 2);
  });

  it('a worker running queued syncs stops within seconds, saying why in one line; a new worker with the jobs queued again leaves the exact truth', async () => {
    await harness?.close();
    harness = await startHarness({ seed: 402, size: SIZE, faults: { latencyMs: 3 }, perKeyPerMinute: PER_KEY_PER_MINUTE });
    const sim = harness.sim;
    const random = seededRandom(402);
    const trials = chaosTrials();
    const outcomes: Record<string, number> = {};
    let restartedMidRun = 0;
    let slowestExitMs = 0;
    let closeCut = 0;
    let rateLimited = 0;
    for (let trial = 0; trial < trials; trial++) {
      const prefix = `${redis.prefix}-worker-${trial}`;
      const warehousePath = join(harness.dir, `worker-${trial}.duckdb`);
      const env = workerEnv(harness.url, warehousePath, redis.url, prefix, {
        SALES_API_RATE_LIMIT: String(PER_KEY_PER_MINUTE),
        SALESYNC_FLUSH_ROWS: '200',
        SALESYNC_LEASE_TTL: LEASE_TTL,
      });
      const queue = openQueue(redis.connect(), prefix);
      // What the schedules' ticks add: one sync job per resource.
      const enqueue = () => Promise.all(RESOURCE_NAMES.map((resource) => queue.add('sync', { resource, mode: 'incremental' })));
      await enqueue();
      sim.admin.resetStats();

      const worker = startCli(['worker'], env);
      // 'close', not 'exit': its last line on stderr must have been read.
      const closed = new Promise<number | null>((resolve) => worker.child.once('close', resolve));
      await waitFor(
        async () => worker.output(),
        (o) => o.includes('worker started'),
        20_000,
        'the worker to start',
      );
      await sleep(Math.floor(random() * 2500));
      if ((await pendingJobs(queue)) > 0) restartedMidRun += 1;
      await redis.restart();
      const restartedAt = Date.now();
      const code = await Promise.race([closed, sleep(RUN_BOUND_MS, 'still running' as const)]);
      if (code === 'still running') worker.child.kill('SIGKILL');
      expect(code, `worker still running ${RUN_BOUND_MS} ms after a Redis restart:\n${worker.output()}`).not.toBe('still running');
      slowestExitMs = Math.max(slowestExitMs, Date.now() - restartedAt);
      // BullMQ's own close stuck on a connection caught reconnecting, and cut after a grace (jobs/worker.ts).
      if (worker.output().includes('the queue connection did not close: cutting it')) closeCut += 1;
      const stderr = stderrOf(worker.output());
      const run: CliRun = { code: code as number | null, signal: null, pid: worker.child.pid ?? null, stdout: '', stderr };
      expectCompletedOrOneLine(run);
      tally(outcomes, run, 'stopped cleanly');

      // The restart took the queue with it: `salesync schedule` re-registered, its ticks queue the syncs again.
      sim.admin.mutateRandom(10, 6000 + trial, ['update', 'same-value', 'create', 'activity']);
      expect(await pendingJobs(queue)).toBe(0);
      await enqueue();
      const next = startCli(['worker'], env);
      await waitFor(
        () => pendingJobs(queue),
        (n) => n === 0,
        60_000,
        'the queue to drain',
      );
      next.child.kill('SIGTERM');
      expect(await next.exited, next.output()).toBe(0);
      await queue.close();
      await expectMirrorsTruth(createWarehouse({ ...harness.config, warehousePath }, silent), sim);
      rateLimited += sim.admin.stats().rateLimited;
    }
    chaosReport('Redis restarted under a worker', {
      trials,
      restartedMidRun,
      ...outcomes,
      slowestExitAfterRestartMs: slowestExitMs,
      bullmqCloseCut: closeCut,
      rateLimited429: rateLimited,
    });
    expect(rateLimited).toBe(0);
    expect(restartedMidRun).toBeGreaterThan(trials / 2);
  });
});

/** A run ends either cleanly or with exit 1 and exactly one stderr line: `salesync: <code>: <what to do>`. */
function expectCompletedOrOneLine(run: CliRun): void {
  if (run.code === 0) return;
  expect(run.code, run.stderr).toBe(1);
  expect(run.stderr).toMatch(ONE_LINE_FAILURE);
}

/** Counts outcomes by name: `ok` for exit 0, else the failure's code (e.g. `walk_lease_lost`). */
function tally(outcomes: Record<string, number>, run: CliRun, ok = 'completed'): void {
  const name = run.code === 0 ? ok : (/^salesync: ([a-z_]+):/.exec(run.stderr)?.[1] ?? `exit ${String(run.code)}`);
  outcomes[name] = (outcomes[name] ?? 0) + 1;
}

/** The worker helper merges stdout and stderr; its JSON log lines are stdout's, everything else is stderr's. */
function stderrOf(output: string): string {
  return output
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('{'))
    .map((line) => `${line}\n`)
    .join('');
}
