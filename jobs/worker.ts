import { setTimeout as sleep } from 'node:timers/promises';
import { Worker, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../src/config.js';
import { SalesyncError } from '../src/core/errors.js';
import { acquireLease, warehouseLeaseKey, type Lease } from '../src/lease/index.js';
import { serveDashboard, serveMetrics, type DashboardOptions, type Served } from './dashboard.js';
import { createJobEnvironment } from './job-environment.js';
import { createWorkerMetrics, type WorkerMetrics } from './metrics.js';
import { createProcessor } from './processor.js';
import { openQueue, QUEUE_NAME } from './queue.js';
import { listSchedules } from './schedules.js';
import { openRedis } from '../src/redis/index.js';
import { collectStatus, type ResourceStatus } from '../src/status/index.js';
import { checkConnection, toSalesyncError, walkLeaseGuard } from '../src/sync/index.js';

export interface RunWorkerOptions {
  config: Config & { redisUrl: string };
  logger: Logger;
  /** SIGTERM/SIGINT: stop taking jobs, let walks commit what they hold, and return. */
  signal: AbortSignal;
  /** How long `worker.close()` may wait for active jobs before it is forced. @defaultValue 30000 */
  closeTimeoutMs?: number;
  /** Called once the worker owns the warehouse and takes jobs (tests wait for it). */
  onReady?: (info: {
    dashboardPort: number | null;
    metricsPort: number | null;
    dashboardHost: string | null;
    metricsHost: string | null;
  }) => void;
}

/** How long a BullMQ job lock lives without renewal: a SIGKILLed worker's job is taken over after it. */
const LOCK_DURATION_MS = 60_000;

/** How long BullMQ's close may still take once every job of the worker has settled. */
const JOBS_DONE_GRACE_MS = 2000;

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i;

/**
 * One worker process per warehouse file. Start-up fails fast, before anything changes: Redis must answer within
 * SALESYNC_REDIS_TIMEOUT (`redis_unavailable`, exit 1, for its supervisor to restart it) and the dashboard and
 * metrics ports must be free (`port_in_use`). Then it takes the warehouse lease (a standby waits, saying so, and
 * takes over when the owner's lease lapses), and runs jobs until `signal` aborts. Shutdown: abort the walks (each
 * commits the pages in hand with its checkpoint, and its job is delayed to resume elsewhere), close the worker
 * with a timeout (BullMQ's close has none), release the lease, close Redis.
 */
export async function runWorker(options: RunWorkerOptions): Promise<void> {
  const { config, logger, signal } = options;
  const connections: Redis[] = [];
  const served: Served[] = [];
  let queue: Queue | null = null;
  let lease: Lease | null = null;
  // Redis away for longer than SALESYNC_REDIS_TIMEOUT after start: the connections give up, and so does the worker.
  const redisLost = new AbortController();
  const onLost = (failure: SalesyncError) => {
    if (redisLost.signal.aborted) return;
    logger.error({ err: failure.message }, 'Redis stayed away longer than SALESYNC_REDIS_TIMEOUT: stopping');
    redisLost.abort(failure);
  };
  try {
    const connect = async (log?: Logger) => {
      const client = await openRedis(config.redisUrl, { timeoutMs: config.redisTimeoutMs, signal, onLost, ...(log ? { log } : {}) });
      connections.push(client);
      return client;
    };
    let redis: Redis;
    let workerRedis: Redis;
    try {
      redis = await connect(logger);
      // The worker blocks on its own connection; queue adds, leases and the limiter share the other.
      workerRedis = await connect();
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
    const leaseKey = warehouseLeaseKey(config.redisPrefix, config.warehousePath);
    const metrics = createWorkerMetrics();
    queue = openQueue(redis, config.redisPrefix);
    // Ports first: a port in use is the operator's to fix, said before this worker takes a lease or a job.
    const dashboard = config.dashboardPort > 0 ? await serveDashboard(queue, dashboardOptions(config)) : null;
    if (dashboard) served.push(dashboard);
    const metricsServer =
      config.metricsPort > 0 ? await serveMetrics(metrics.registry, { port: config.metricsPort, host: config.metricsHost }) : null;
    if (metricsServer) served.push(metricsServer);
    warnIfExposed(config, logger);

    lease = await takeWarehouse(redis, leaseKey);
    if (!lease) return;
    // The walks stop on shutdown, when the warehouse lease is lost (another worker may already own the file), and
    // when Redis stayed away too long.
    const stop = AbortSignal.any([signal, lease.lost, redisLost.signal]);
    lease.lost.addEventListener('abort', () => logger.error({ warehouse: config.warehousePath }, 'lost the warehouse lease: stopping'), {
      once: true,
    });

    const jobs = createJobEnvironment(config, { logger, signal: stop, redis, meter: metrics.meter });
    await jobs.env.warehouse.ensureSchema();
    // A key refused is said at start, not at the first job; a service away may come back, so that only warns.
    try {
      await checkConnection(jobs.env.deps.makeApi(), stop);
    } catch (error) {
      const failure = toSalesyncError(error);
      if (failure.disposition === 'fatal') throw failure;
      if (!stop.aborted)
        logger.warn({ code: failure.code, err: failure.message }, 'the service did not answer at start: every job tries it again');
    }
    const guard = walkLeaseGuard({
      redis,
      prefix: config.redisPrefix,
      warehouse: jobs.env.warehouse,
      warehousePath: config.warehousePath,
      logger,
      ttlMs: config.leaseTtlMs,
      waitMs: 0,
      signal: stop,
    });
    // By twice the lease's ttl a crashed holder's lease has lapsed.
    const processor = createProcessor({ queue, jobs, guard, metrics, logger, shutdown: stop, busyRetryMs: 2 * config.leaseTtlMs });
    const health = healthRefresher(() => collectStatus(jobs.env.warehouse), metrics, logger);
    health.refresh();
    // The jobs in hand, so shutdown can tell "a job is still committing" from "BullMQ is stuck on a connection".
    const running = new Set<Promise<unknown>>();
    const track: typeof processor = (job, token, jobSignal) => {
      const run = processor(job, token, jobSignal);
      running.add(run);
      void run
        .finally(() => running.delete(run))
        .finally(() => health.refresh())
        .catch(() => undefined);
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
    worker.on('failed', (job, error) =>
      logger.warn({ job: job?.id, kind: job?.name, err: error.message, attempts: job?.attemptsMade }, 'job failed'),
    );
    worker.on('error', (error) => logger.error({ err: error.message }, 'worker error'));

    const ready = {
      dashboardPort: dashboard?.port ?? null,
      dashboardHost: dashboard?.host ?? null,
      metricsPort: metricsServer?.port ?? null,
      metricsHost: metricsServer?.host ?? null,
    };
    logger.info(
      { warehouse: config.warehousePath, concurrency: config.workerConcurrency, ...ready, dashboardWrite: config.dashboardWrite },
      'worker started',
    );
    // A Redis restarted without persistence forgets the schedules: the worker would idle, saying nothing. Only a
    // warning: a Redis that drops as it is read is the connections' to report (`onLost`, after SALESYNC_REDIS_TIMEOUT).
    const schedules = await listSchedules(queue).catch((error: unknown) => {
      logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'could not read the schedules at start');
      return null;
    });
    if (schedules?.length === 0) {
      logger.warn('no schedules in Redis: this worker runs only jobs queued by hand; run `salesync schedule` to register them');
    }
    options.onReady?.(ready);

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
      if (ended === 'timeout')
        logger.warn(
          { closeTimeoutMs },
          'active jobs did not finish in time: closing anyway (their locks lapse and another worker resumes them)',
        );
      else logger.warn('the jobs are done but the queue connection did not close: cutting it');
      await Promise.race([worker.disconnect(), sleep(1000, undefined, { ref: false })]).catch(() => undefined);
    }
    await health.settled();
    await jobs.close();
    // Told to stop first, it stopped as told; a Redis that went for good first ends it with `redis_unavailable`.
    if (redisLost.signal.aborted && stop.reason === redisLost.signal.reason) throw redisLost.signal.reason;
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
    await queue?.close().catch(() => undefined);
    await lease?.release().catch(() => undefined);
    await Promise.all(connections.map((c) => c.quit().catch(() => c.disconnect())));
  }

  async function takeWarehouse(redis: Redis, leaseKey: string): Promise<Lease | null> {
    try {
      return await acquireLease(redis, leaseKey, {
        ttlMs: config.leaseTtlMs,
        waitMs: Number.POSITIVE_INFINITY,
        signal: AbortSignal.any([signal, redisLost.signal]),
        onHeld: (holder) =>
          logger.info(
            { warehouse: config.warehousePath, holder },
            `standby: ${config.warehousePath} is owned by the worker ${holder}; taking over when its lease lapses`,
          ),
      });
    } catch (error) {
      if (signal.aborted) return null;
      // A standby whose Redis went for good: its failure, not the lease's raw "Connection is closed".
      if (redisLost.signal.aborted) throw redisLost.signal.reason;
      throw error;
    }
  }
}

/** The dashboard as configured: read-only unless SALESYNC_DASHBOARD_WRITE, basic auth when a user and password are set. */
export function dashboardOptions(config: Config): DashboardOptions {
  return {
    port: config.dashboardPort,
    host: config.dashboardHost,
    write: config.dashboardWrite,
    auth: config.dashboardUser && config.dashboardPassword ? { user: config.dashboardUser, password: config.dashboardPassword } : null,
  };
}

/** Say so when the operator opened a server to the network: who can reach it, and what it lets them do. */
function warnIfExposed(config: Config, logger: Logger): void {
  if (config.dashboardPort > 0 && !LOOPBACK.test(config.dashboardHost)) {
    const auth = config.dashboardUser ? 'behind basic auth' : 'with no login (set SALESYNC_DASHBOARD_USER and SALESYNC_DASHBOARD_PASSWORD)';
    const mode = config.dashboardWrite ? 'and can retry, delete and edit jobs' : 'read-only';
    logger.warn(
      { host: config.dashboardHost, port: config.dashboardPort },
      `bull-board listens on ${config.dashboardHost}, ${auth}, ${mode}`,
    );
  }
  if (config.metricsPort > 0 && !LOOPBACK.test(config.metricsHost)) {
    logger.info({ host: config.metricsHost, port: config.metricsPort }, `metrics listen on ${config.metricsHost}`);
  }
}

/**
 * Keeps the health gauges current: re-read after every job (one read at a time; a request during a read asks
 * for one more), so a scrape never opens the warehouse itself.
 */
function healthRefresher(
  read: () => Promise<ResourceStatus[]>,
  metrics: WorkerMetrics,
  logger: Logger,
): { refresh(): void; settled(): Promise<void> } {
  let reading: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  const refresh = () => {
    if (stopped) return;
    if (reading) {
      again = true;
      return;
    }
    reading = (async () => {
      do {
        again = false;
        try {
          metrics.health.update(await read());
        } catch (error) {
          logger.warn(
            { err: error instanceof Error ? error.message : String(error) },
            'could not read the warehouse for the health metrics',
          );
        }
      } while (again && !stopped);
    })().finally(() => {
      reading = null;
    });
  };
  return {
    refresh,
    settled: async () => {
      stopped = true;
      await reading;
    },
  };
}
