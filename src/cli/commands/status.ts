import { existsSync } from 'node:fs';
import { ConfigError } from '../../core/errors.js';
import { RESOURCES } from '../../core/resources.js';
import { parseInstantMicros } from '../../core/time.js';
import { createWarehouse } from '../../sync/index.js';
import { connectRedisBriefly, openQueue } from '../../../jobs/queue.js';
import { jobsPerResource, type ResourceJobs } from '../../../jobs/queue-status.js';
import type { CliRuntime } from '../runtime.js';
import { formatDuration, formatTable } from '../table.js';

export interface ResourceStatus {
  resource: string;
  rows: number;
  watermark: string | null;
  lastCompletedAt: string | null;
  /** Milliseconds since the last completed walk. */
  freshnessMs: number | null;
  walkInProgress: boolean;
  lastRun: { startedAt: string; mode: string; outcome: string; records: number; requests: number; rateLimited: number; durationMs: number | null; error: string | null } | null;
  /** Jobs queued and running for the resource (only when REDIS_URL is set). */
  jobs?: ResourceJobs;
}

/** Queued and active jobs per resource, or null without Redis (or when it cannot be reached: said in the log). */
async function collectJobs(runtime: CliRuntime): Promise<Map<string, ResourceJobs> | null> {
  const { redisUrl, redisPrefix } = runtime.config;
  if (!redisUrl) return null;
  const redis = connectRedisBriefly(redisUrl);
  redis.on('error', () => undefined);
  const queue = openQueue(redis, redisPrefix);
  try {
    return await jobsPerResource(queue);
  } catch (error) {
    runtime.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'could not read the job queue from Redis');
    return null;
  } finally {
    await queue.close().catch(() => undefined);
    redis.disconnect();
  }
}

export async function collectStatus(runtime: CliRuntime, now = Date.now()): Promise<ResourceStatus[]> {
  if (!existsSync(runtime.config.warehousePath)) {
    throw new ConfigError('warehouse_missing', `no warehouse at ${runtime.config.warehousePath}: run \`salesync sync\` first (or set WAREHOUSE_PATH)`);
  }
  const warehouse = createWarehouse(runtime.config, runtime.logger);
  const counts = await warehouse.tableCounts();
  const runs = await warehouse.recentRuns(200);
  const statuses: ResourceStatus[] = [];
  for (const descriptor of RESOURCES) {
    const state = await warehouse.readState(descriptor.name);
    const last = runs.find((r) => r.resource === descriptor.name);
    const completed = state.lastCompletedAt ? parseInstantMicros(state.lastCompletedAt) : null;
    statuses.push({
      resource: descriptor.name,
      rows: counts[descriptor.table] ?? 0,
      watermark: state.watermark,
      lastCompletedAt: state.lastCompletedAt,
      freshnessMs: completed === null ? null : now - Number(completed / 1000n),
      walkInProgress: state.walk !== null && state.walk.cursor !== null,
      lastRun: last
        ? {
            startedAt: last.startedAt.toISOString(),
            mode: last.mode,
            outcome: last.outcome,
            records: last.records ?? 0,
            requests: last.requests ?? 0,
            rateLimited: last.rateLimited ?? 0,
            durationMs: last.finishedAt ? last.finishedAt.getTime() - last.startedAt.getTime() : null,
            error: last.errorCode ?? null,
          }
        : null,
    });
  }
  return statuses;
}

export async function statusCommand(runtime: CliRuntime, options: { json?: boolean }): Promise<void> {
  const statuses = await collectStatus(runtime);
  const jobs = await collectJobs(runtime);
  if (jobs) for (const s of statuses) s.jobs = jobs.get(s.resource) ?? { queued: 0, active: 0 };
  if (options.json) {
    runtime.out(JSON.stringify({ warehouse: runtime.config.warehousePath, resources: statuses }, null, 2));
    return;
  }
  runtime.out(`warehouse: ${runtime.config.warehousePath}\n`);
  runtime.out(
    formatTable(
      ['resource', 'rows', 'watermark', 'fresh', 'last run', 'mode', 'outcome', 'records', 'requests', '429s', 'took', ...(jobs ? ['queued', 'active'] : [])],
      statuses.map((s) => [
        s.resource + (s.walkInProgress ? ' *' : ''),
        s.rows,
        s.watermark,
        s.freshnessMs === null ? null : `${formatDuration(s.freshnessMs)} ago`,
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
  if (statuses.some((s) => s.walkInProgress)) runtime.out('\n* an interrupted walk: the next sync resumes it from its checkpoint');
}
