import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../src/config.js';
import { SalesyncError } from '../src/core/errors.js';
import { acquireLease, type Lease } from '../src/lease/index.js';
import { serveDashboard, serveMetrics, type Served } from './dashboard.js';
import { createJobEnvironment } from './job-environment.js';
import { createWorkerMetrics } from './metrics.js';
import { createProcessor } from './processor.js';
import { connectRedis, openQueue, QUEUE_NAME, warehouseLeaseKey } from './queue.js';
import { walkLeaseGuard } from './walk-lease.js';

export interface RunWorkerOptions {
  config: Config & { redisUrl: string };
  logger: Logger;
  /** SIGTERM/SIGINT: stop taking jobs, let walks commit what they hold, and return. */
  signal: AbortSignal;
  /** How long `worker.close()` may wait for active jobs before it is forced. @defaultValue 30000 */
  closeTimeoutMs?: number;
  /** Called once the worker owns the warehouse and takes jobs (tests wait for it). */
  onReady?: (info: { dashboardPort: number | null; metricsPort: number | null }) => void;
}

/** How long a BullMQ job lock lives without renewal: a SIGKILLed worker's job is taken over after it. */
const LOCK_DURATION_MS = 60_000;

/** How long BullMQ's close may still take once every job of the worker has settled. */
const JOBS_DONE_GRACE_MS = 2000;

/**
 * One worker process per warehouse file: it first takes the warehouse lease (a standby waits, saying so, and
 * takes over when the owner's lease lapses), then runs jobs until `signal` aborts. Shutdown: abort the walks
 * (each commits the pages in hand with its checkpoint, and its job is delayed to resume elsewhere), close the
 * worker with a timeout (BullMQ's close has none), release the lease, close Redis.
 */
export async function runWorker(options: RunWorkerOptions): Promise<void> {
  const { config, logger, signal } = options;
  const redis = connectRedis(config.redisUrl, logger);
  // The worker blocks on its own connection; queue adds, leases and the limiter share the other.
  const workerRedis = connectRedis(config.redisUrl);
  const leaseKey = warehouseLeaseKey(config.redisPrefix, config.warehousePath);
  const served: Served[] = [];
  let lease: Lease | null = null;
  try {
    lease = await takeWarehouse();
    if (!lease) return;
    // The walks stop on shutdown and when the warehouse lease is lost (another worker may already own the file).
    const stop = AbortSignal.any([signal, lease.lost]);
    lease.lost.addEventListener('abort', () => logger.error({ warehouse: config.warehousePath }, 'lost the warehouse lease: stopping'), { once: true });

    const metrics = createWorkerMetrics();
    const queue = openQueue(redis, config.redisPrefix);
    const jobs = createJobEnvironment(config, { logger, signal: stop, redis, meter: metrics.meter });
    await jobs.env.warehouse.ensureSchema();
    const guard = walkLeaseGuard({ redis, prefix: config.redisPrefix, warehouse: jobs.env.warehouse, logger, ttlMs: config.leaseTtlMs, waitMs: 0, signal: stop });
    const processor = createProcessor({ queue, jobs, guard, metrics, logger, shutdown: stop });
    // The jobs in hand, so shutdown can tell "a job is still committing" from "BullMQ is stuck on a connection".
    const running = new Set<Promise<unknown>>();
    const track: typeof processor = (job, token, jobSignal) => {
      const run = processor(job, token, jobSignal);
      running.add(run);
      void run.finally(() => running.delete(run)).catch(() => undefined);
      return run;
    };
    const worker = new Worker(QUEUE_NAME, track, {
      connection: workerRedis,
      prefix: config.redisPrefix,
      concurrency: config.workerConcurrency,
      lockDuration: LOCK_DURATION_MS,
      stalledInterval: LOCK_DURATION_MS / 2,
      maxStalledCount: 2,
    });
    worker.on('failed', (job, error) => logger.warn({ job: job?.id, kind: job?.name, err: error.message, attempts: job?.attemptsMade }, 'job failed'));
    worker.on('error', (error) => logger.error({ err: error.message }, 'worker error'));

    if (config.dashboardPort > 0) served.push(await serveDashboard(queue, config.dashboardPort));
    if (config.metricsPort > 0) served.push(await serveMetrics(metrics.registry, config.metricsPort));
    const dashboardPort = config.dashboardPort > 0 ? served[0]!.port : null;
    const metricsPort = config.metricsPort > 0 ? served[served.length - 1]!.port : null;
    logger.info({ warehouse: config.warehousePath, concurrency: config.workerConcurrency, dashboardPort, metricsPort }, 'worker started');
    options.onReady?.({ dashboardPort, metricsPort });

    await new Promise<void>((resolve) => (stop.aborted ? resolve() : stop.addEventListener('abort', () => resolve(), { once: true })));
    logger.info('worker stopping: active walks commit what they hold');
    const closeTimeoutMs = options.closeTimeoutMs ?? 30_000;
    const closed = worker.close().then(() => 'closed' as const);
    // Unref'd timers: once everything is closed, nothing keeps the process alive for the rest of a timeout.
    const jobsDone = (async () => {
      while (running.size > 0) await Promise.allSettled([...running]);
      return sleep(JOBS_DONE_GRACE_MS, 'jobs done' as const, { ref: false });
    })();
    const ended = await Promise.race([closed, jobsDone, sleep(closeTimeoutMs, 'timeout' as const, { ref: false })]);
    if (ended !== 'closed') {
      // BullMQ's close also waits for its blocking connection, which never ends when close finds it reconnecting
      // (right after a Redis restart, BullMQ 6 parks it there), and close(true) only returns the close already
      // under way. Cut the worker's connections instead; its timers may linger (the CLI exits regardless).
      if (ended === 'timeout') logger.warn({ closeTimeoutMs }, 'active jobs did not finish in time: closing anyway (their locks lapse and another worker resumes them)');
      else logger.warn('the jobs are done but the queue connection did not close: cutting it');
      await Promise.race([worker.disconnect(), sleep(1000, undefined, { ref: false })]).catch(() => undefined);
    }
    await queue.close();
    await jobs.close();
    if (lease.lost.aborted) {
      throw new SalesyncError(
        'worker_lease_lost',
        `lost the lease on ${config.warehousePath} (another worker took it, or Redis lost it, e.g. restarted): stopped; start ` +
          'the worker again (if Redis restarted without persistence, also run `salesync schedule` again: the schedules were in Redis)',
        { disposition: 'retriable' },
      );
    }
  } finally {
    await Promise.all(served.map((s) => s.close()));
    await lease?.release().catch(() => undefined);
    await Promise.all([redis, workerRedis].map((c) => c.quit().catch(() => c.disconnect())));
  }

  async function takeWarehouse(): Promise<Lease | null> {
    try {
      return await acquireLease(redis, leaseKey, {
        ttlMs: config.leaseTtlMs,
        waitMs: Number.POSITIVE_INFINITY,
        signal,
        onHeld: (holder) =>
          logger.info({ warehouse: config.warehousePath, holder }, `standby: ${config.warehousePath} is owned by the worker ${holder}; taking over when its lease lapses`),
      });
    } catch (error) {
      if (signal.aborted) return null;
      throw error;
    }
  }
}
