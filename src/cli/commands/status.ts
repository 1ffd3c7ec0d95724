import { SalesyncError } from '../../core/errors.js';
import { createWarehouse } from '../../sync/index.js';
import { assertReadableIfPresent, firstSyncWriting, warehouseMissing } from '../../warehouse/index.js';
import { jobsPerResource, openQueue } from '../../../jobs/index.js';
import { openRedis, redisFailureReason, redisUnavailable } from '../../redis/index.js';
import { collectStatus as readStatus, unpublishedStatus, type ResourceJobs, type ResourceStatus } from '../../status/index.js';
import { checkFailure, findProblems, problemLine, type MaxAges, type Problem } from '../health-check.js';
import type { CliRuntime } from '../runtime.js';
import { formatDuration } from '../format.js';
import { formatTable } from '../table.js';

export type { ResourceStatus } from '../../status/index.js';

export interface StatusOptions {
  json?: boolean;
  /** Exit EXIT_UNHEALTHY (4) with one line per problem when a resource is stale, failing or has records in quarantine. */
  check?: boolean;
  /** `--max-age`: the default from SALESYNC_MAX_AGE, overridden overall and per resource. */
  maxAges?: MaxAges;
}

/** Queued and active jobs per resource, or null without Redis; `redis_unavailable` when it does not answer in time. */
async function collectJobs(runtime: CliRuntime): Promise<Map<string, ResourceJobs> | null> {
  const { redisUrl, redisPrefix, redisTimeoutMs } = runtime.config;
  if (!redisUrl) return null;
  const redis = await openRedis(redisUrl, { timeoutMs: redisTimeoutMs, signal: runtime.signal, brief: true });
  const queue = openQueue(redis, redisPrefix);
  try {
    return await jobsPerResource(queue);
  } catch (error) {
    throw error instanceof SalesyncError ? error : redisUnavailable(redisUrl, redisFailureReason(error));
  } finally {
    await queue.close().catch(() => undefined);
    redis.disconnect();
  }
}

/**
 * Every resource's status from the published file; `published: false` while a first sync writes the warehouse (or
 * was stopped) before its first publish. No file and no writer's file: `warehouse_missing` (WAREHOUSE_PATH names
 * nothing salesync wrote).
 */
export async function collectStatus(runtime: CliRuntime, now = Date.now()): Promise<{ statuses: ResourceStatus[]; published: boolean }> {
  const path = runtime.config.warehousePath;
  if (assertReadableIfPresent(path) === 'missing') {
    if (!firstSyncWriting(path)) throw warehouseMissing(path);
    return { statuses: unpublishedStatus(runtime.config.propertyPolicy), published: false };
  }
  const warehouse = createWarehouse(runtime.config, runtime.logger);
  try {
    return { statuses: await readStatus(warehouse, now, runtime.config.propertyPolicy), published: true };
  } finally {
    await warehouse.close();
  }
}

/**
 * `salesync status [--json] [--check] [--max-age …]`: per resource, rows, freshness, quarantine and the last run;
 * with REDIS_URL, the jobs queued and running. `--check` is for cron and monitoring: one line per problem, exit 4.
 */
export async function statusCommand(runtime: CliRuntime, options: StatusOptions = {}): Promise<void> {
  const { statuses, published } = await collectStatus(runtime);
  let redisFailure: SalesyncError | null = null;
  let jobs: Map<string, ResourceJobs> | null = null;
  try {
    jobs = await collectJobs(runtime);
  } catch (error) {
    if (!(error instanceof SalesyncError) || error.code !== 'redis_unavailable') throw error;
    redisFailure = error;
  }
  if (jobs) for (const s of statuses) s.jobs = jobs.get(s.resource) ?? { queued: 0, active: 0 };
  const maxAges = options.maxAges ?? { default: runtime.config.maxAgeMs, perResource: {} };
  const problems: Problem[] = findProblems(statuses, maxAges);
  if (redisFailure) problems.push({ resource: 'queue', kind: 'redis_unavailable', message: redisFailure.message });

  if (options.json) {
    runtime.out(
      JSON.stringify(
        {
          warehouse: runtime.config.warehousePath,
          published,
          checkedAt: new Date().toISOString(),
          healthy: problems.length === 0,
          problems,
          resources: statuses,
        },
        null,
        2,
      ),
    );
  } else if (!options.check || runtime.interactive) {
    printTable(runtime, statuses, jobs !== null, published);
  }
  if (options.check) {
    // Cron mails whatever a job prints: a healthy check prints nothing; a problem prints what to do.
    if (!options.json) for (const problem of problems) runtime.out(problemLine(problem));
    if (problems.length > 0) throw checkFailure(problems);
    return;
  }
  if (redisFailure) throw redisFailure;
}

function freshness(s: ResourceStatus): string | null {
  if (s.freshnessMs === null) return null;
  return s.freshnessMs < 1000 ? 'just now' : `${formatDuration(s.freshnessMs)} ago`;
}

function printTable(runtime: CliRuntime, statuses: readonly ResourceStatus[], withJobs: boolean, published: boolean): void {
  runtime.out(
    published
      ? `warehouse: ${runtime.config.warehousePath}\n`
      : `warehouse: ${runtime.config.warehousePath}, not published yet: a first sync is writing it (or was stopped: run \`salesync sync\`); ` +
          'it appears when a run ends, and every SALESYNC_PUBLISH_EVERY during a long one\n',
  );
  runtime.out(
    formatTable(
      [
        'resource',
        'rows',
        'rejected',
        'watermark',
        'fresh',
        'last run',
        'mode',
        'outcome',
        'records',
        'requests',
        '429s',
        'took',
        ...(withJobs ? ['queued', 'active'] : []),
      ],
      statuses.map((s) => [
        s.resource + (s.walkInProgress ? ' *' : '') + (s.backfillInProgress ? ' +' : ''),
        s.rows,
        s.rejected,
        s.watermark,
        freshness(s),
        s.lastRun?.startedAt.replace('T', ' ').slice(0, 19) ?? null,
        s.lastRun?.mode ?? null,
        s.lastRun ? s.lastRun.outcome + (s.lastRun.error ? ` (${s.lastRun.error})` : '') : null,
        s.lastRun?.records ?? null,
        s.lastRun?.requests ?? null,
        s.lastRun?.rateLimited ?? null,
        s.lastRun?.durationMs == null ? null : formatDuration(s.lastRun.durationMs),
        ...(s.jobs ? [s.jobs.queued, s.jobs.active] : []),
      ]),
    ),
  );
  const policies = statuses.filter(
    (s) => s.propertyPolicy && (!s.propertyPolicy.applied || s.propertyPolicy.summary !== 'all properties kept'),
  );
  if (policies.length > 0) {
    runtime.out('\nproperty policy (docs/property-policy.md):');
    for (const s of policies) {
      const p = s.propertyPolicy!;
      runtime.out(`  ${s.resource}: ${p.summary}${p.applied ? '' : ' (not applied yet: the next run purges and walks in full)'}`);
    }
  }
  if (statuses.some((s) => s.walkInProgress)) runtime.out('\n* an interrupted walk: the next sync resumes it from its checkpoint');
  if (statuses.some((s) => s.backfillInProgress)) {
    runtime.out('\n+ an interrupted backfill: `salesync backfill <resource>` (or its queued job) resumes it from its checkpoint');
  }
  if (statuses.some((s) => s.rejected > 0)) {
    runtime.out(
      '\nrejected: records that failed validation, kept verbatim in rejected_records (salesync query "SELECT * FROM rejected_records")',
    );
  }
  const ahead = Math.max(0, ...statuses.map((s) => s.clockAheadMs ?? 0));
  if (ahead >= 1000)
    runtime.out(
      `\nthe service's clock was ${formatDuration(ahead)} ahead of this host's at the last completion: ages count from "just now"`,
    );
}
