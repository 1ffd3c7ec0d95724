import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { processBackfillJob } from '../../jobs/backfill-job.js';
import { openQueue } from '../../jobs/queue.js';
import { resourceLeaseKey } from '../../src/lease/index.js';
import { defaultSchedules, listSchedules, registerSchedules, removeSchedules } from '../../jobs/schedules.js';
import { processTickJob } from '../../jobs/tick-job.js';
import { runWorker } from '../../jobs/worker.js';
import { DEFAULT_CONFIG } from '../../src/config.js';
import { tryAcquireLease } from '../../src/lease/index.js';
import { findProblems } from '../../src/cli/health-check.js';
import { collectStatus } from '../../src/status/index.js';
import { createWarehouse } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness } from '../support/harness.js';
import { useTestRedis } from '../support/use-redis.js';
import { cliEnv, pendingJobs, runCli, waitFor } from './helpers.js';

const silent = pino({ level: 'silent' });
const redis = useTestRedis();

/** A worker in this process, started once it is ready to take jobs; `stop` aborts it and waits for its end. */
async function startWorker(config: Parameters<typeof runWorker>[0]['config']): Promise<{ stop(): Promise<void> }> {
  const stop = new AbortController();
  let ready!: () => void;
  const started = new Promise<void>((resolve) => (ready = resolve));
  const worker = runWorker({ config, logger: silent, signal: stop.signal, onReady: () => ready() });
  await Promise.race([started, worker]);
  return {
    async stop() {
      stop.abort();
      await worker;
    },
  };
}

describe('schedule', () => {
  it('registers the same schedulers however often it runs, and removes them', async () => {
    const queue = openQueue(redis.connect(), `${redis.prefix}-sched`);
    const config = { ...DEFAULT_CONFIG, timezone: 'Asia/Tokyo' };
    await registerSchedules(queue, defaultSchedules(config));
    const first = await listSchedules(queue);
    await registerSchedules(queue, defaultSchedules(config));
    const second = await listSchedules(queue);
    expect(second.map((s) => s.id)).toEqual(first.map((s) => s.id));
    expect(await queue.getJobSchedulersCount()).toBe(first.length);
    // 5 record resources synced and reconciled, users, a deep reconcile of meeting logs, summaries.
    expect(first).toHaveLength(13);
    expect(first.find((s) => s.id === 'salesync:sync:deals')).toMatchObject({ every: 15 * 60_000 });
    expect(first.find((s) => s.id === 'salesync:sync:users')).toMatchObject({ every: 60 * 60_000 });
    expect(first.find((s) => s.id === 'salesync:reconcile:deals')).toMatchObject({ pattern: '0 3 * * *', tz: 'Asia/Tokyo' });
    expect(first.find((s) => s.id === 'salesync:summaries')).toMatchObject({ every: 60 * 60_000 });
    expect(first.find((s) => s.id === 'salesync:reconcile-deep:meeting-logs')).toMatchObject({ pattern: '0 5 * * 0', tz: 'Asia/Tokyo' });
    expect(defaultSchedules({ ...config, deepReconcileCron: 'off' }).map((s) => s.id)).not.toContain(
      'salesync:reconcile-deep:meeting-logs',
    );
    // A changed interval updates the scheduler in place.
    await registerSchedules(queue, defaultSchedules({ ...config, syncEveryMs: 60_000 }));
    expect((await listSchedules(queue)).find((s) => s.id === 'salesync:sync:deals')).toMatchObject({ every: 60_000 });
    expect(await removeSchedules(queue)).toHaveLength(13);
    expect(await listSchedules(queue)).toEqual([]);
    await queue.close();
  });
});

describe('a worker with no schedules', () => {
  it('says so at start, and not once the schedules are registered', async () => {
    const harness = await startHarness({ size: { deals: 5 } });
    const prefix = `${redis.prefix}-unscheduled`;
    const config = { ...harness.config, redisUrl: redis.url, redisPrefix: prefix, dashboardPort: 0, metricsPort: 0 };
    const started = async () => {
      const lines: string[] = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
      const stop = new AbortController();
      let ready!: () => void;
      const isReady = new Promise<void>((resolve) => (ready = resolve));
      const worker = runWorker({ config, logger, signal: stop.signal, onReady: () => ready() });
      await Promise.race([isReady, worker]);
      stop.abort();
      await worker;
      return lines.some((l) => l.includes('no schedules in Redis'));
    };
    expect(await started()).toBe(true);
    const queue = openQueue(redis.connect(), prefix);
    await registerSchedules(queue, defaultSchedules(config));
    await queue.close();
    expect(await started()).toBe(false);
    await harness.close();
  });
});

describe('ticks', () => {
  it('a deep reconcile tick adds its own job beside a queued nightly reconcile; a second tick of either adds nothing', async () => {
    const queue = openQueue(redis.connect(), `${redis.prefix}-ticks`);
    const plain = await processTickJob(queue, { kind: 'reconcile', data: { resource: 'meeting-logs' } });
    const deep = await processTickJob(queue, { kind: 'reconcile', data: { resource: 'meeting-logs', deep: true } });
    expect(deep.jobId).not.toBe(plain.jobId);
    expect((await processTickJob(queue, { kind: 'reconcile', data: { resource: 'meeting-logs', deep: true } })).jobId).toBe(deep.jobId);
    expect((await processTickJob(queue, { kind: 'reconcile', data: { resource: 'meeting-logs' } })).jobId).toBe(plain.jobId);
    expect((await queue.getJob(deep.jobId!))?.data).toEqual({ resource: 'meeting-logs', deep: true });
    await queue.obliterate({ force: true });
    await queue.close();
  });
});

describe('one walk per resource', () => {
  it('two sync jobs and a manual sync of one resource at once: one walks at a time, the others are skipped or wait, all recorded', async () => {
    const harness = await startHarness({ size: { meetingLogs: 150 }, perKeyPerMinute: 2400 });
    const prefix = `${redis.prefix}-overlap`;
    const config = {
      ...harness.config,
      redisUrl: redis.url,
      redisPrefix: prefix,
      dashboardPort: 0,
      metricsPort: 0,
      workerConcurrency: 3,
      leaseTtlMs: 3000,
    };
    const worker = await startWorker(config);
    try {
      const queue = openQueue(redis.connect(), prefix);
      const manual = runCli(
        ['sync', 'meeting-logs'],
        cliEnv(harness.url, harness.config.warehousePath, redis.url, prefix, { SALES_API_RATE_LIMIT: '2400', SALESYNC_LEASE_WAIT: '60s' }),
      );
      await Promise.all([
        queue.add('sync', { resource: 'meeting-logs', mode: 'incremental' }),
        queue.add('sync', { resource: 'meeting-logs', mode: 'incremental' }),
      ]);
      const result = await manual;
      expect(result.code, result.output).toBe(0);
      await waitFor(
        () => pendingJobs(queue),
        (n) => n === 0,
        60_000,
        'the queue to drain',
      );
      await queue.close();
    } finally {
      await worker.stop();
    }
    const warehouse = createWarehouse(harness.config, silent);
    // Each completed walk of meeting logs is followed by its summaries re-read (mode summaries): the walks are counted here.
    const runs = (await warehouse.recentRuns(50)).filter((r) => r.resource === 'meeting-logs' && r.mode !== 'summaries');
    expect(runs).toHaveLength(3);
    const walked = runs.filter((r) => r.outcome !== 'skipped').sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
    expect(runs.filter((r) => r.outcome === 'skipped').length).toBeGreaterThanOrEqual(1);
    expect(walked.every((r) => r.outcome === 'succeeded')).toBe(true);
    // Never two at once: each walk starts after the one before it finished.
    for (let i = 1; i < walked.length; i++)
      expect(walked[i]!.startedAt.getTime()).toBeGreaterThanOrEqual(walked[i - 1]!.finishedAt!.getTime());
    await expectMirrorsTruth(warehouse, harness.sim, { resources: ['meeting-logs'] });
    await harness.close();
  });
});

describe('manual reconcile and summaries with REDIS_URL', () => {
  it('a reconcile waits for the lease of a resource being walked elsewhere, is skipped and recorded past SALESYNC_LEASE_WAIT; it and summaries draw their tokens from the shared limiter', async () => {
    const harness = await startHarness({ size: { deals: 250, meetingLogs: 20 } });
    const prefix = `${redis.prefix}-manual-reconcile`;
    // 30/min for the organization: a token every 3 s, 10 at once. Each token a run takes moves the shared
    // bucket's theoretical arrival time (tat) 3 s ahead of Redis's clock, and the bucket outlives the run by that.
    const TOKEN_MS = 3000;
    const env = cliEnv(harness.url, harness.config.warehousePath, redis.url, prefix, {
      SALESYNC_LEASE_WAIT: '1s',
      SALES_API_ORG_RATE_LIMIT: '30',
    });
    try {
      const client = redis.connect();
      // Another process walking deals.
      const held = await tryAcquireLease(client, resourceLeaseKey(prefix, harness.config.warehousePath, 'deals'), {
        ttlMs: 60_000,
        holder: 'other-host pid 1',
      });
      expect(held).not.toBeNull();
      const waited = await runCli(['reconcile', 'deals'], env);
      // Nothing was reconciled, and no other walk does it: a cron line must not pass for one that did.
      expect(waited.code, waited.output).toBe(1);
      expect(waited.output).toContain('deals is being walked by other-host pid 1: waiting up to 1 s');
      expect(waited.output).toContain('skipped: other-host pid 1 was walking deals');
      expect(waited.output).toMatch(
        /^salesync: walk_in_progress: another process walked deals past SALESYNC_LEASE_WAIT, so deals was not reconciled: rerun when it is done/m,
      );
      await held!.release();

      const redisNow = async () => {
        const [seconds, micros] = await client.time();
        return Number(seconds) * 1000 + Number(micros) / 1000;
      };
      const orgTat = async () => Number((await client.hget(`{${prefix}}:limiter:org`, 'tat')) ?? 0);
      const beforeSweep = await redisNow();
      const swept = await runCli(['reconcile', 'deals'], env);
      expect(swept.code, swept.output).toBe(0);
      // The connection check, the property definitions and two pages: four tokens from the shared bucket.
      const afterSweep = await orgTat();
      expect(afterSweep).toBeGreaterThanOrEqual(beforeSweep + 4 * TOKEN_MS);
      const summaries = await runCli(['summaries'], env);
      expect(summaries.code, summaries.output).toBe(0);
      // At least its connection check.
      expect(await orgTat()).toBeGreaterThanOrEqual(afterSweep + TOKEN_MS);

      const warehouse = createWarehouse(harness.config, silent);
      const runs = (await warehouse.recentRuns(50))
        .filter((r) => r.resource === 'deals')
        .sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
      expect(runs.map((r) => [r.mode, r.outcome])).toEqual([
        ['reconcile', 'skipped'],
        ['reconcile', 'succeeded'],
      ]);
      await expectMirrorsTruth(warehouse, harness.sim, { resources: ['deals'] });
    } finally {
      await harness.close();
    }
  });
});

describe('reconcile jobs', () => {
  it('a worker holds a queued reconcile and backfill while another process walks the resource, runs them once it is free, and the reconcile marks the deletion and fixes the silent changes', async () => {
    const harness = await startHarness({ size: { deals: 250 } });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const gone = harness.sim.admin.truth().records.deals[3]!.id;
    harness.sim.admin.deleteRecord('deals', gone);
    // Predicted values change without moving updated_at: only a sweep sees them.
    harness.sim.admin.runPredictionBatch();
    const prefix = `${redis.prefix}-reconcile-job`;
    const config = { ...harness.config, redisUrl: redis.url, redisPrefix: prefix, dashboardPort: 0, metricsPort: 0, leaseTtlMs: 1000 };
    const client = redis.connect();
    const held = await tryAcquireLease(client, resourceLeaseKey(prefix, harness.config.warehousePath, 'deals'), {
      ttlMs: 60_000,
      holder: 'other-host pid 1',
    });
    const worker = await startWorker(config);
    try {
      const queue = openQueue(client, prefix);
      await queue.add('reconcile', { resource: 'deals' });
      await queue.add('backfill', { resource: 'deals', since: null, until: null });
      // Neither ends while the resource is busy: each waits for it, delayed.
      await waitFor(
        () => queue.getDelayedCount(),
        (n) => n === 2,
        30_000,
        'both jobs to wait for the resource',
      );
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect(await queue.getJobCounts('completed', 'delayed', 'failed')).toMatchObject({ completed: 0, failed: 0 });
      await held!.release();
      await waitFor(
        () => pendingJobs(queue),
        (n) => n === 0,
        60_000,
        'the reconcile and the backfill to run',
      );
      expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 2, failed: 0 });
      await queue.close();
    } finally {
      await worker.stop();
    }
    const warehouse = createWarehouse(harness.config, silent);
    const runs = (await warehouse.recentRuns(50)).sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
    const outcomes = (mode: string) => runs.filter((r) => r.mode === mode).map((r) => r.outcome);
    for (const mode of ['reconcile', 'backfill']) {
      expect(outcomes(mode).at(-1)).toBe('succeeded');
      expect(
        outcomes(mode)
          .slice(0, -1)
          .every((o) => o === 'skipped'),
      ).toBe(true);
      expect(outcomes(mode).length).toBeGreaterThanOrEqual(2);
    }
    const swept = runs.filter((r) => r.mode === 'reconcile').at(-1)!;
    expect(swept).toMatchObject({ deleted: 1 });
    expect(swept.changed).toBeGreaterThan(0);
    await expectMirrorsTruth(warehouse, harness.sim, { resources: ['deals'] });
    await harness.close();
  });
});

describe('a job that fails before its walk', () => {
  it('is recorded as a failed run of its resource and mode, so status --check sees a key revoked, not only the log', async () => {
    const harness = await startHarness({ size: { deals: 20 } });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const prefix = `${redis.prefix}-prewalk`;
    const config = { ...harness.config, redisUrl: redis.url, redisPrefix: prefix, dashboardPort: 0, metricsPort: 0 };
    const worker = await startWorker(config);
    harness.sim.admin.revokeKey(harness.config.apiKey!);
    try {
      const queue = openQueue(redis.connect(), prefix);
      await queue.add('sync', { resource: 'deals', mode: 'incremental' });
      await waitFor(
        () => pendingJobs(queue),
        (n) => n === 0,
        30_000,
        'the sync job to end',
      );
      expect(await queue.getJobCounts('failed')).toEqual({ failed: 1 });
      await queue.close();
    } finally {
      await worker.stop();
    }
    const warehouse = createWarehouse(harness.config, silent);
    const statuses = await collectStatus(warehouse);
    const deals = statuses.find((s) => s.resource === 'deals')!;
    expect(deals.lastRuns.incremental).toMatchObject({ outcome: 'failed', error: 'unauthorized' });
    expect(findProblems(statuses, { default: null, perResource: {} }).map((p) => `${p.resource} ${p.kind}`)).toContain('deals failed');
    await warehouse.close();
    await harness.close();
  });

  it('a worker whose key the service refuses stops at start with unauthorized, before it takes a job', async () => {
    const harness = await startHarness({ size: { deals: 5 } });
    const config = { ...harness.config, redisUrl: redis.url, redisPrefix: `${redis.prefix}-refused`, dashboardPort: 0, metricsPort: 0 };
    harness.sim.admin.revokeKey(harness.config.apiKey!);
    await expect(runWorker({ config, logger: silent, signal: new AbortController().signal })).rejects.toMatchObject({
      code: 'unauthorized',
    });
    await harness.close();
  });
});

describe('backfill', () => {
  it('replays a window without moving the watermark, resumes from its own checkpoint (status shows it waiting), and ends equal to the truth', async () => {
    const harness = await startHarness({ size: { deals: 1400 } }, { flushRows: 200 });
    await harness.sync();
    const env = harness.env();
    const before = await env.warehouse.readState('deals');
    const since = new Date(Date.now() - 1000).toISOString();
    harness.sim.admin.mutateRandom(80, 7, ['update', 'create']);

    // Interrupted after its second page of seven: the pages in hand are kept under deals#backfill.
    const stop = new AbortController();
    const cut = await processBackfillJob(
      { ...env.deps, signal: stop.signal, progress: { update: (p) => (p.pages >= 2 ? stop.abort() : undefined) } },
      env.settings,
      { resource: 'deals', since: null, until: null },
    );
    expect(cut.outcome).toBe('interrupted');
    expect((await env.warehouse.readState('deals', 'deals#backfill')).walk?.cursor).toBeTruthy();
    // status shows it waiting, as it shows an interrupted sync.
    const interrupted = async () => (await collectStatus(env.warehouse)).find((s) => s.resource === 'deals')!;
    expect(await interrupted()).toMatchObject({ backfillInProgress: true, walkInProgress: false });
    const resumed = await processBackfillJob(env.deps, env.settings, { resource: 'deals', since: null, until: null });
    expect(resumed).toMatchObject({ outcome: 'succeeded', resumed: true, mode: 'backfill' });
    expect(await interrupted()).toMatchObject({ backfillInProgress: false });

    const windowed = await processBackfillJob(env.deps, env.settings, { resource: 'deals', since, until: new Date().toISOString() });
    expect(windowed.outcome).toBe('succeeded');
    const after = await env.warehouse.readState('deals');
    expect(after.watermark).toBe(before.watermark);
    expect(after.lastCompletedAt).toBe(before.lastCompletedAt);
    expect(after.walk).toBeNull();
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
    const modes = (await env.warehouse.recentRuns(10)).filter((r) => r.resource === 'deals').map((r) => r.mode);
    expect(modes.filter((m) => m === 'backfill')).toHaveLength(3);
    await harness.close();
  });
});
