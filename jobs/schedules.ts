import type { Queue } from 'bullmq';
import type { Config } from '../src/config.js';
import { RECORD_RESOURCE_NAMES } from '../src/core/resources.js';
import type { TickJobData } from './queue.js';

/** One Job Scheduler: its id, when it fires, and the tick it emits. */
export interface ScheduleDefinition {
  id: string;
  repeat: { every: number } | { pattern: string; tz: string };
  tick: TickJobData;
}

/** Ids of the schedulers salesync owns start with this, so `--remove` never touches anyone else's. */
export const SCHEDULE_PREFIX = 'salesync:';

/**
 * The schedules `salesync schedule` registers: an incremental sync of each record resource (15 min), users
 * (hourly), the reconcile sweep of each record resource (nightly at 03:00 in SALESYNC_TIMEZONE) and the
 * summaries job (hourly). Intervals come from the configuration.
 */
export function defaultSchedules(config: Config): ScheduleDefinition[] {
  return [
    ...RECORD_RESOURCE_NAMES.map((resource) => ({
      id: `${SCHEDULE_PREFIX}sync:${resource}`,
      repeat: { every: config.syncEveryMs },
      tick: { kind: 'sync' as const, data: { resource, mode: 'incremental' as const } },
    })),
    { id: `${SCHEDULE_PREFIX}sync:users`, repeat: { every: config.usersEveryMs }, tick: { kind: 'sync', data: { resource: 'users', mode: 'incremental' } } },
    ...RECORD_RESOURCE_NAMES.map((resource) => ({
      id: `${SCHEDULE_PREFIX}reconcile:${resource}`,
      repeat: { pattern: config.reconcileCron, tz: config.timezone },
      tick: { kind: 'reconcile' as const, data: { resource } },
    })),
    { id: `${SCHEDULE_PREFIX}summaries`, repeat: { every: config.summariesEveryMs }, tick: { kind: 'summaries', data: {} } },
  ];
}

/**
 * Register (or update) every schedule. Idempotent: upsertJobScheduler keeps one scheduler per id, so running
 * `schedule` twice, or from every deploy, leaves the same schedulers. Schedulers of ours no longer in the list
 * (a resource dropped from the configuration) are removed.
 */
export async function registerSchedules(queue: Queue, schedules: readonly ScheduleDefinition[]): Promise<{ upserted: string[]; removed: string[] }> {
  for (const schedule of schedules) {
    await queue.upsertJobScheduler(schedule.id, schedule.repeat, {
      name: 'tick',
      data: schedule.tick,
      opts: { removeOnComplete: { count: 50 }, removeOnFail: { count: 50 } },
    });
  }
  const wanted = new Set(schedules.map((s) => s.id));
  const stale = (await listSchedules(queue)).filter((s) => !wanted.has(s.id)).map((s) => s.id);
  for (const id of stale) await queue.removeJobScheduler(id);
  return { upserted: schedules.map((s) => s.id), removed: stale };
}

export interface ScheduleRow {
  id: string;
  every: number | null;
  pattern: string | null;
  tz: string | null;
  /** Epoch ms of the next tick, when known. */
  next: number | null;
}

export async function listSchedules(queue: Queue): Promise<ScheduleRow[]> {
  const schedulers = await queue.getJobSchedulers(0, -1, true);
  return schedulers
    .map((s) => ({ id: s.id ?? s.key, every: s.every ?? null, pattern: s.pattern ?? null, tz: s.tz ?? null, next: s.next ?? null }))
    .filter((s) => s.id.startsWith(SCHEDULE_PREFIX))
    .sort((a, b) => a.id.localeCompare(b.id));
}

/** Remove salesync's schedulers (all, or the given ids). Jobs already queued still run. */
export async function removeSchedules(queue: Queue, ids?: readonly string[]): Promise<string[]> {
  const targets = ids ?? (await listSchedules(queue)).map((s) => s.id);
  const removed: string[] = [];
  for (const id of targets) if (await queue.removeJobScheduler(id)) removed.push(id);
  return removed;
}
