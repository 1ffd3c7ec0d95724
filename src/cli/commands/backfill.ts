import { resourceDescriptor } from '../../core/resources.js';
import type { ResourceResult } from '../../sync/index.js';
import { ConfigError } from '../../core/errors.js';
import {
  backfillRequest,
  createJobEnvironment,
  deduplicationId,
  openQueue,
  processBackfillJob,
  type BackfillJobData,
} from '../../../jobs/index.js';
import { openRedis } from '../../redis/index.js';
import { BackfillProgressLine } from '../backfill-progress.js';
import type { CliRuntime } from '../runtime.js';
import { connectShared } from '../command-environment.js';
import { commandFailure } from '../outcome.js';
import { formatCount, formatDuration } from '../format.js';

export interface BackfillFlags {
  since?: string;
  until?: string;
  wait?: boolean;
}

/**
 * `salesync backfill <resource>`: without REDIS_URL, run it here, in the foreground, with a progress line (there is
 * no queue to hand it to); with REDIS_URL, queue a job for the workers, or with `--wait` run it here under the
 * resource's lease. Either way it resumes from its own checkpoint and never moves the incremental watermark.
 */
export async function backfillCommand(runtime: CliRuntime, resource: string, flags: BackfillFlags): Promise<ResourceResult | null> {
  const request = backfillRequest(resource, flags.since, flags.until);
  const { config } = runtime;
  if (!flags.wait && config.redisUrl) {
    // A short command's connection, like status and schedule: ready, or `redis_unavailable` within SALESYNC_REDIS_TIMEOUT.
    const redis = await openRedis(config.redisUrl, { timeoutMs: config.redisTimeoutMs, signal: runtime.signal, brief: true });
    const queue = openQueue(redis, config.redisPrefix);
    try {
      const job = await queue.add('backfill', request, { deduplication: { id: deduplicationId('backfill', request.resource) } });
      // One backfill per resource at a time: the id given back may be that of one queued or running already.
      const queued = job.id === undefined ? undefined : await queue.getJob(job.id);
      const earlier = queued !== undefined && queued.timestamp !== job.timestamp;
      if (earlier && !sameWindow(queued.data as BackfillJobData, request))
        throw alreadyQueued(request.resource, job.id!, queued.data as BackfillJobData);
      runtime.logger.info({ job: job.id, ...request, alreadyQueued: earlier }, 'backfill queued');
      runtime.out(
        `${earlier ? 'already queued' : 'queued'}: backfill of ${request.resource} (job ${job.id}); a worker runs it (see the dashboard, or \`salesync status\`)`,
      );
      return null;
    } finally {
      await queue.close();
      await redis.quit().catch(() => redis.disconnect());
    }
  }

  const shared = await connectShared(runtime);
  const jobs = createJobEnvironment(config, { logger: runtime.logger, signal: runtime.signal, redis: shared?.redis ?? null });
  runtime.display?.stop();
  const line = runtime.interactive
    ? new BackfillProgressLine(
        process.stderr,
        await expectedRecords(jobs.env.warehouse, request.resource, request.since),
        config.perKeyPerMinute,
      )
    : null;
  try {
    const guard = shared?.guard(jobs.env.warehouse);
    const result = await processBackfillJob(
      { ...jobs.backfillDeps, ...(line ? { progress: line } : {}) },
      jobs.env.settings,
      request,
      guard,
    );
    line?.stop();
    runtime.out(
      `backfill of ${result.resource}: ${result.outcome}${result.resumed ? ' (resumed)' : ''}, ${formatCount(result.pages, 'page')}, ${formatCount(result.written, 'record')} written, ` +
        `${formatCount(result.requests, 'request')} in ${formatDuration(result.durationMs)}`,
    );
    const failure = commandFailure([result], { skipped: 'backfilled' });
    if (failure) throw failure;
    return result;
  } finally {
    line?.stop();
    await jobs.close();
    await shared?.close();
  }
}

function sameWindow(a: BackfillJobData, b: BackfillJobData): boolean {
  return (a.since ?? null) === (b.since ?? null) && (a.until ?? null) === (b.until ?? null);
}

function alreadyQueued(resource: string, jobId: string, queued: BackfillJobData): ConfigError {
  const window = (w: BackfillJobData) => `since ${w.since ?? 'the beginning'}, until ${w.until ?? 'now'}`;
  return new ConfigError(
    'backfill_already_queued',
    `a backfill of ${resource} is already queued or running (job ${jobId}, ${window(queued)}), and only one runs per resource: ` +
      'wait until `salesync status` or the dashboard shows it done, then queue this one again (or run it here with --wait)',
    { resource, jobId },
  );
}

/** What the warehouse already holds in the window: the best guess of what the walk will bring. */
async function expectedRecords(
  warehouse: { query(sql: string): Promise<Record<string, unknown>[]> },
  resource: string,
  since: string | null,
): Promise<number | null> {
  const table = resourceDescriptor(resource as Parameters<typeof resourceDescriptor>[0]).table;
  try {
    const where = since === null ? '' : ` WHERE updated_at >= CAST('${since.replace(/'/g, "''")}' AS TIMESTAMPTZ)`;
    const rows = await warehouse.query(`SELECT count(*)::BIGINT AS n FROM "${table}"${where}`);
    const n = Number(rows[0]?.n ?? 0);
    return n > 0 ? n : null;
  } catch {
    // No table yet (a first backfill): nothing to estimate from.
    return null;
  }
}
