import { ConfigError } from '../../core/errors.js';
import {
  defaultSchedules,
  listSchedules,
  openQueue,
  registerSchedules,
  removeSchedules,
  validateSchedules,
  type ScheduleRow,
} from '../../../jobs/index.js';
import { openRedis } from '../../redis/index.js';
import type { CliRuntime } from '../runtime.js';
import { formatTable } from '../table.js';

/** The flags of `salesync schedule`. */
export interface ScheduleFlags {
  list?: boolean;
  remove?: boolean;
  json?: boolean;
  syncEvery?: number;
  usersEvery?: number;
  summariesEvery?: number;
  reconcileCron?: string;
  deepReconcileCron?: string;
  timezone?: string;
}

const SETTING_FLAGS: Array<[keyof ScheduleFlags, string]> = [
  ['syncEvery', '--sync-every'],
  ['usersEvery', '--users-every'],
  ['summariesEvery', '--summaries-every'],
  ['reconcileCron', '--reconcile-cron'],
  ['deepReconcileCron', '--deep-reconcile-cron'],
  ['timezone', '--timezone'],
];

/**
 * Flags that ask for two things at once are refused before Redis is touched: `--list` changes nothing while
 * `--remove` removes every schedule, and a schedule's setting means nothing to either.
 */
function checkScheduleFlags(options: ScheduleFlags): void {
  if (options.list && options.remove) {
    throw new ConfigError('invalid_option', '--list changes nothing and --remove removes every schedule: give one of them');
  }
  const given = SETTING_FLAGS.filter(([key]) => options[key] !== undefined).map(([, flag]) => flag);
  if ((options.list || options.remove) && given.length > 0) {
    throw new ConfigError(
      'invalid_option',
      `${options.list ? '--list' : '--remove'} takes no schedule setting (got ${given.join(', ')}): drop them, or run schedule without it to register them`,
    );
  }
}

/**
 * `salesync schedule`: register the Job Schedulers (idempotent); `--list` shows them, `--remove` removes them.
 * Every schedule is checked (time zone, cron pattern, intervals) before Redis is touched: all or nothing.
 */
export async function scheduleCommand(runtime: CliRuntime, options: ScheduleFlags): Promise<ScheduleRow[]> {
  checkScheduleFlags(options);
  const { config } = runtime;
  if (!config.redisUrl) {
    throw new ConfigError('missing_redis_url', 'REDIS_URL is not set: schedules live in Redis (e.g. REDIS_URL=redis://localhost:6379)');
  }
  const schedules = defaultSchedules(config);
  if (!options.list && !options.remove) validateSchedules(schedules);
  const redis = await openRedis(config.redisUrl, { timeoutMs: config.redisTimeoutMs, signal: runtime.signal, brief: true });
  const queue = openQueue(redis, config.redisPrefix);
  try {
    if (options.remove) {
      const removed = await removeSchedules(queue);
      runtime.logger.info({ removed }, 'schedules removed');
      runtime.out(`removed ${removed.length} schedule${removed.length === 1 ? '' : 's'}`);
      return [];
    }
    if (!options.list) {
      const { upserted, removed } = await registerSchedules(queue, schedules);
      runtime.logger.info({ upserted: upserted.length, removed }, 'schedules registered');
    }
    const rows = await listSchedules(queue);
    runtime.out(options.json ? JSON.stringify(rows, null, 2) : formatSchedules(rows));
    return rows;
  } finally {
    await queue.close();
    await redis.quit().catch(() => redis.disconnect());
  }
}

function formatSchedules(rows: readonly ScheduleRow[]): string {
  if (rows.length === 0) return 'no schedules: run `salesync schedule` to register them';
  return formatTable(
    ['schedule', 'every', 'cron', 'time zone', 'next'],
    rows.map((r) => [
      r.id,
      r.every === null ? null : humanEvery(r.every),
      r.pattern,
      r.tz,
      r.next === null ? null : new Date(r.next).toISOString().replace('T', ' ').slice(0, 19),
    ]),
  );
}

function humanEvery(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
