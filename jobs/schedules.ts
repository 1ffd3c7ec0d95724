import { getNextMillis, type Queue } from 'bullmq';
import type { Config } from '../src/config.js';
import { ConfigError, shown } from '../src/core/errors.js';
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

/** The weekly deep reconcile of meeting logs (`SALESYNC_DEEP_RECONCILE_CRON`). */
const DEEP_RECONCILE_ID = `${SCHEDULE_PREFIX}reconcile-deep:meeting-logs`;

/**
 * The schedules `salesync schedule` registers: an incremental sync of each record resource (15 min), users
 * (hourly), the reconcile sweep of each record resource (nightly at 03:00 in SALESYNC_TIMEZONE), a deep reconcile
 * of meeting logs (Sundays at 05:00; summaries regenerated on a log older than the summaries window move nothing
 * a plain sweep sees) and the summaries job (hourly). Intervals come from the configuration.
 */
export function defaultSchedules(config: Config): ScheduleDefinition[] {
  return [
    ...RECORD_RESOURCE_NAMES.map((resource) => ({
      id: `${SCHEDULE_PREFIX}sync:${resource}`,
      repeat: { every: config.syncEveryMs },
      tick: { kind: 'sync' as const, data: { resource, mode: 'incremental' as const } },
    })),
    {
      id: `${SCHEDULE_PREFIX}sync:users`,
      repeat: { every: config.usersEveryMs },
      tick: { kind: 'sync', data: { resource: 'users', mode: 'incremental' } },
    },
    ...RECORD_RESOURCE_NAMES.map((resource) => ({
      id: `${SCHEDULE_PREFIX}reconcile:${resource}`,
      repeat: { pattern: config.reconcileCron, tz: config.timezone },
      tick: { kind: 'reconcile' as const, data: { resource } },
    })),
    ...(config.deepReconcileCron === 'off'
      ? []
      : [
          {
            id: DEEP_RECONCILE_ID,
            repeat: { pattern: config.deepReconcileCron, tz: config.timezone },
            tick: { kind: 'reconcile' as const, data: { resource: 'meeting-logs' as const, deep: true } },
          },
        ]),
    { id: `${SCHEDULE_PREFIX}summaries`, repeat: { every: config.summariesEveryMs }, tick: { kind: 'summaries', data: {} } },
  ];
}

/** The flag and variable that set a cron schedule's pattern, for its error. */
function cronSetting(id: string): string {
  return id === DEEP_RECONCILE_ID ? '--deep-reconcile-cron or SALESYNC_DEEP_RECONCILE_CRON' : '--reconcile-cron or SALESYNC_RECONCILE_CRON';
}

/** A time zone this runtime knows (the IANA names BullMQ's cron parser resolves through the same Intl data). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * Every schedule checked the way BullMQ will compute its next run, before anything is registered: `schedule`
 * changes all of them or none. Throws ConfigError `invalid_timezone`, `invalid_cron` or `invalid_config`.
 */
export function validateSchedules(schedules: readonly ScheduleDefinition[], now = Date.now()): void {
  for (const { id, repeat } of schedules) {
    if ('every' in repeat) {
      if (!(Number.isFinite(repeat.every) && repeat.every >= 1000)) {
        throw new ConfigError('invalid_config', `${id}: an interval must be at least 1s (--sync-every, --users-every, --summaries-every)`, {
          schedule: id,
        });
      }
      continue;
    }
    if (!isTimeZone(repeat.tz)) {
      throw new ConfigError(
        'invalid_timezone',
        `unknown time zone ${shown(repeat.tz)} (--timezone or SALESYNC_TIMEZONE): use an IANA name such as UTC, Europe/Paris or Asia/Tokyo`,
        { schedule: id },
      );
    }
    let next: number | undefined;
    let why = 'it never fires';
    // Five fields (six with seconds first): the parser reads fewer as a pattern too ("0" fires every minute).
    const fields = repeat.pattern.trim().split(/\s+/).length;
    if (fields < 5 || fields > 6) why = `it has ${fields} field${fields === 1 ? '' : 's'}`;
    else {
      try {
        next = getNextMillis(now, { pattern: repeat.pattern, tz: repeat.tz });
      } catch (error) {
        why = error instanceof Error ? error.message : String(error);
      }
    }
    if (next === undefined || !Number.isFinite(next)) {
      throw new ConfigError(
        'invalid_cron',
        `invalid cron pattern ${shown(repeat.pattern)} (${cronSetting(id)}): ${shown(why).startsWith('"') ? why : 'not a cron pattern'}; ` +
          'use five fields, minute hour day-of-month month day-of-week, such as "0 3 * * *" for 03:00 daily',
        { schedule: id },
      );
    }
  }
}

/**
 * Register (or update) every schedule. Idempotent: upsertJobScheduler keeps one scheduler per id, so running
 * `schedule` twice, or from every deploy, leaves the same schedulers. Schedulers of ours no longer in the list
 * (a resource dropped from the configuration) are removed.
 */
export async function registerSchedules(
  queue: Queue,
  schedules: readonly ScheduleDefinition[],
): Promise<{ upserted: string[]; removed: string[] }> {
  validateSchedules(schedules);
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
