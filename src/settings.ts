/**
 * Every setting salesync reads, once: its variable, how its text is read (a zod schema with the message a wrong
 * value gets), its default, and what it means. The Config type, the defaults, validation, the configuration file
 * and the README's configuration table (checked by a test) all come from this table.
 */
import { z } from 'zod';
import { parseDurationMs } from './core/time.js';
import type { PropertyPolicy } from './core/property-policy.js';

/** Levels LOG_LEVEL and `--log-level` accept (pino's). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export interface Setting<T> {
  /** The environment variable, also the key in the configuration file. */
  variable: string;
  /** Reads the variable's text (already trimmed and not empty). */
  schema: z.ZodType<T, string>;
  default: T;
  /** The README's default cell when `default` does not say it well (`automatic`, `owner's`). */
  defaultText?: string;
  /** The README's meaning cell: one line. */
  meaning: string;
  /** Never echoed in an error (keys, passwords, URLs that may carry a token). */
  secret?: boolean;
  /** Read as written, spaces and all (a password). */
  verbatim?: boolean;
}

function setting<T>(spec: Setting<T>): Setting<T> {
  return spec;
}

/** A schema that maps the text with `read`, or fails with `problem` (said after the variable's name). */
function reading<T>(problem: string, read: (raw: string) => T | undefined): z.ZodType<T, string> {
  return z.string().transform((raw, context) => {
    const value = read(raw);
    if (value === undefined) {
      context.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    }
    return value;
  });
}

const text = z.string();
const integer = (min: number) =>
  reading(`must be a whole number of at least ${min}`, (raw) =>
    Number.isInteger(Number(raw)) && Number(raw) >= min ? Number(raw) : undefined,
  );
/** The longest a timer can wait: Node's setTimeout holds 2^31 − 1 ms (about 24.8 days) and fires at once past it. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
/** The longest span a window or an interval may cover: a century (a lookback past year 0 is no instant). */
export const MAX_SPAN_MS = 36_525 * 86_400_000;
const durationWithin = (min: number, max: number, message: string) =>
  reading(message, (raw) => {
    const ms = parseDurationMs(raw);
    return ms !== null && ms >= min && ms <= max ? ms : undefined;
  });
const duration = durationWithin(0, MAX_SPAN_MS, 'must be a duration such as 300, 90s, 5m or 1h, at most 100 years');
const positiveDuration = durationWithin(1, MAX_SPAN_MS, 'must be a duration above zero, such as 10s, at most 100 years');
/** A duration some timer waits out. */
const timer = durationWithin(0, MAX_TIMER_MS, 'must be a duration such as 90s, 5m or 1h, at most 24 days');
const positiveTimer = durationWithin(1, MAX_TIMER_MS, 'must be a duration above zero such as 10s, at most 24 days');
const list = reading('must list at least one value, comma-separated', (raw) => {
  const values = raw
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v.length > 0);
  return values.length > 0 ? values : undefined;
});
const memorySize = reading('must be a size such as 128MB or 1GB', (raw) =>
  /^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(raw) ? raw : undefined,
);
// The owner must keep read and write: the writer replaces the file.
const fileMode = reading('must be an octal file mode that the owner can read and write, such as 0640', (raw) => {
  const value = /^0?[0-7]{3}$/.test(raw) ? parseInt(raw, 8) : NaN;
  return Number.isNaN(value) || (value & 0o600) !== 0o600 ? undefined : value;
});
const fraction = reading('must be a share above 0 and at most 1, such as 0.5', (raw) =>
  Number(raw) > 0 && Number(raw) <= 1 ? Number(raw) : undefined,
);
const logLevel = reading(`must be one of ${LOG_LEVELS.join(', ')}`, (raw) => {
  const level = raw.toLowerCase();
  return (LOG_LEVELS as readonly string[]).includes(level) ? level : undefined;
});
const flag = reading('must be true or false', (raw) =>
  /^(true|1|yes|on)$/i.test(raw) ? true : /^(false|0|no|off)$/i.test(raw) ? false : undefined,
);
// An address to listen on: a host name or an IP, never a URL or a port.
const host = reading('must be an address to listen on, such as 127.0.0.1 or 0.0.0.0', (raw) =>
  /^[A-Za-z0-9.:_-]+$/.test(raw) && !raw.includes('://') ? raw : undefined,
);
const httpUrl = reading('must be an http:// or https:// URL', (raw) => {
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:' ? raw : undefined;
  } catch {
    return undefined;
  }
});

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** The settings, in the README's order. */
export const SETTINGS = {
  baseUrl: setting<string | null>({
    variable: 'SALES_API_BASE_URL',
    schema: text,
    default: null,
    meaning: 'the service address, with or without `/v1` (flag `--base-url`)',
    secret: true,
  }),
  apiKey: setting<string | null>({
    variable: 'SALES_API_KEY',
    schema: text,
    default: null,
    meaning: '`sk_` + 40 or more base62 characters; several keys, comma-separated, make a pool',
    secret: true,
  }),
  warehousePath: setting({
    variable: 'WAREHOUSE_PATH',
    schema: text,
    default: './data/warehouse.duckdb',
    meaning: 'the DuckDB file (flag `--warehouse`)',
  }),
  logLevel: setting({
    variable: 'LOG_LEVEL',
    schema: logLevel,
    default: 'info',
    defaultText: '`info` (`warn` on a terminal)',
    meaning: '`trace`, `debug`, `info`, `warn`, `error`, `fatal` or `silent`',
  }),
  lookbackMs: setting({
    variable: 'SALESYNC_LOOKBACK',
    schema: duration,
    default: 5 * MINUTE,
    defaultText: '`5m`',
    meaning: 'each incremental walk starts this long before the watermark',
  }),
  maxPasses: setting({
    variable: 'SALESYNC_MAX_PASSES',
    schema: integer(1),
    default: 3,
    meaning: 'passes over a moving list before the watermark waits for the next run',
  }),
  resourceConcurrency: setting({
    variable: 'SALESYNC_CONCURRENCY',
    schema: integer(1),
    default: 3,
    meaning: 'resources walked at once (flag `--concurrency`)',
  }),
  detailConcurrency: setting({
    variable: 'SALESYNC_DETAIL_CONCURRENCY',
    schema: integer(1),
    default: 8,
    meaning: 'single-record GETs (meeting-log summaries) in flight',
  }),
  perKeyPerMinute: setting({ variable: 'SALES_API_RATE_LIMIT', schema: integer(1), default: 1000, meaning: 'requests per minute per key' }),
  perOrgPerMinute: setting({
    variable: 'SALES_API_ORG_RATE_LIMIT',
    schema: integer(1),
    default: 5000,
    meaning: 'requests per minute for the whole organization',
  }),
  requestTimeoutMs: setting({
    variable: 'SALES_API_TIMEOUT',
    schema: positiveTimer,
    default: 30_000,
    defaultText: '`30s`',
    meaning: 'per-request timeout',
  }),
  retryLimit: setting({
    variable: 'SALES_API_RETRIES',
    schema: integer(0),
    default: 5,
    meaning: 'retries of a failed request (network, timeout, 5xx, malformed body)',
  }),
  retryBaseDelayMs: setting({
    variable: 'SALES_API_RETRY_DELAY',
    schema: timer,
    default: 500,
    defaultText: '`500ms`',
    meaning: 'first backoff delay; doubles each retry, with full jitter',
  }),
  maxRetryAfterMs: setting({
    variable: 'SALES_API_MAX_WAIT',
    schema: positiveTimer,
    default: 2 * MINUTE,
    defaultText: '`2m`',
    meaning: 'longest wait for the service (Retry-After, a spent window) before a run stops with `rate_limited`',
  }),
  flushRows: setting({
    variable: 'SALESYNC_FLUSH_ROWS',
    schema: integer(1),
    default: 2000,
    meaning: 'rows buffered before one warehouse commit',
  }),
  flushIntervalMs: setting({
    variable: 'SALESYNC_FLUSH_INTERVAL',
    schema: timer,
    default: 5000,
    defaultText: '`5s`',
    meaning: 'longest a fetched page waits for its commit',
  }),
  lockTimeoutMs: setting({
    variable: 'SALESYNC_LOCK_TIMEOUT',
    schema: timer,
    default: 5 * MINUTE,
    defaultText: '`5m`',
    meaning: 'how long a writer waits for a file another process holds',
  }),
  lingerMs: setting({
    variable: 'SALESYNC_LINGER',
    schema: timer,
    default: 500,
    defaultText: '`500ms`',
    meaning: 'how long a run keeps the file open after a write, for its next one',
  }),
  warehouseMemoryLimit: setting<string | null>({
    variable: 'SALESYNC_DUCKDB_MEMORY',
    schema: memorySize,
    default: null,
    defaultText: 'automatic',
    meaning:
      'DuckDB memory limit, e.g. `512MB`; unset: 96MB for commits (half the memory, at least 256MB, for queries, exports and `changes`), raised for wide or huge batches',
  }),
  deleteShare: setting({
    variable: 'SALESYNC_DELETE_SHARE',
    schema: fraction,
    default: 0.1,
    meaning: "most of a table's live rows a reconcile marks deleted without `--force`",
  }),
  summariesWindowMs: setting({
    variable: 'SALESYNC_SUMMARIES_WINDOW',
    schema: duration,
    default: 14 * 24 * HOUR,
    defaultText: '`14d`',
    meaning: "logs created this long before the server's now get summary re-reads",
  }),
  summariesRecheckMs: setting({
    variable: 'SALESYNC_SUMMARIES_RECHECK',
    schema: duration,
    default: HOUR,
    defaultText: '`1h`',
    meaning: 're-read spacing after a change; doubles per unchanged read',
  }),
  summariesFinalStatuses: setting<string[] | null>({
    variable: 'SALESYNC_SUMMARIES_FINAL',
    schema: list,
    default: null,
    defaultText: 'unset',
    meaning: 'optional summary statuses that are final (comma-separated)',
  }),
  publishEveryMs: setting({
    variable: 'SALESYNC_PUBLISH_EVERY',
    schema: timer,
    default: 5 * MINUTE,
    defaultText: '`5m`',
    meaning: 'during a long run, publish `WAREHOUSE_PATH` at most this often; `0`: at run ends only',
  }),
  publishMode: setting({
    variable: 'SALESYNC_PUBLISH_MODE',
    schema: fileMode,
    default: 0o640,
    defaultText: '`0640`',
    meaning: "mode of the published file (the writer's stays 0600)",
  }),
  publishGroup: setting<string | null>({
    variable: 'SALESYNC_PUBLISH_GROUP',
    schema: text,
    default: null,
    defaultText: "owner's",
    meaning: 'group of the published file (a name or gid)',
  }),
  snapshotPath: setting<string | null>({
    variable: 'WAREHOUSE_SNAPSHOT_PATH',
    schema: text,
    default: null,
    meaning: 'optional extra copy, published after each `sync` in which every walk completed',
  }),
  redisUrl: setting<string | null>({
    variable: 'REDIS_URL',
    schema: text,
    default: null,
    meaning: 'share the limiter, leases and job queue through this Redis',
    secret: true,
  }),
  redisPrefix: setting({
    variable: 'REDIS_PREFIX',
    schema: text,
    default: 'salesync',
    meaning: 'prefix of every Redis key salesync writes',
  }),
  backfillShare: setting({
    variable: 'SALESYNC_BACKFILL_SHARE',
    schema: fraction,
    default: 0.5,
    meaning: 'share of the rate a backfill is held to while the schedule wants the rest; alone it may use it all (0–1]',
  }),
  summariesShare: setting({
    variable: 'SALESYNC_SUMMARIES_SHARE',
    schema: fraction,
    default: 0.25,
    meaning: 'the same for summaries re-reads and `reconcile --deep` (0–1]',
  }),
  workerConcurrency: setting({
    variable: 'SALESYNC_WORKER_CONCURRENCY',
    schema: integer(1),
    default: 3,
    meaning: 'jobs a worker runs at once (flag `worker --concurrency`)',
  }),
  dashboardPort: setting({
    variable: 'SALESYNC_DASHBOARD_PORT',
    schema: integer(0),
    default: 3000,
    meaning: 'bull-board port of `worker`; `0` disables',
  }),
  metricsPort: setting({
    variable: 'SALESYNC_METRICS_PORT',
    schema: integer(0),
    default: 9464,
    meaning: 'Prometheus `/metrics` port of `worker`; `0` disables',
  }),
  syncEveryMs: setting({
    variable: 'SALESYNC_SYNC_EVERY',
    schema: duration,
    default: 15 * MINUTE,
    defaultText: '`15m`',
    meaning: '`schedule`: incremental sync of each record resource',
  }),
  usersEveryMs: setting({
    variable: 'SALESYNC_USERS_EVERY',
    schema: duration,
    default: HOUR,
    defaultText: '`1h`',
    meaning: '`schedule`: users refresh',
  }),
  summariesEveryMs: setting({
    variable: 'SALESYNC_SUMMARIES_EVERY',
    schema: duration,
    default: HOUR,
    defaultText: '`1h`',
    meaning: '`schedule`: summaries job',
  }),
  reconcileCron: setting({
    variable: 'SALESYNC_RECONCILE_CRON',
    schema: text,
    default: '0 3 * * *',
    meaning: '`schedule`: reconcile sweep, in `SALESYNC_TIMEZONE`',
  }),
  deepReconcileCron: setting({
    variable: 'SALESYNC_DEEP_RECONCILE_CRON',
    schema: text,
    default: '0 5 * * 0',
    meaning: "`schedule`: `reconcile meeting-logs --deep` (every log's summaries), in `SALESYNC_TIMEZONE`; `off`: never",
  }),
  timezone: setting({ variable: 'SALESYNC_TIMEZONE', schema: text, default: 'UTC', meaning: 'time zone of the reconcile cron pattern' }),
  leaseTtlMs: setting({
    variable: 'SALESYNC_LEASE_TTL',
    schema: durationWithin(1000, MAX_TIMER_MS, 'must be a duration of at least 1s and at most 24 days, such as 30s'),
    default: 30_000,
    defaultText: '`30s`',
    meaning: 'how long a lease outlives a crashed holder',
  }),
  leaseWaitMs: setting({
    variable: 'SALESYNC_LEASE_WAIT',
    schema: timer,
    default: 2 * MINUTE,
    defaultText: '`2m`',
    meaning: 'how long a manual run waits for a resource another process walks',
  }),
  redisTimeoutMs: setting({
    variable: 'SALESYNC_REDIS_TIMEOUT',
    schema: positiveTimer,
    default: 10_000,
    defaultText: '`10s`',
    meaning: 'how long a command or worker waits for Redis, at start or after losing it (`redis_unavailable`)',
  }),
  dashboardHost: setting({
    variable: 'SALESYNC_DASHBOARD_HOST',
    schema: host,
    default: '127.0.0.1',
    meaning: 'address bull-board listens on',
  }),
  metricsHost: setting({ variable: 'SALESYNC_METRICS_HOST', schema: host, default: '127.0.0.1', meaning: 'address `/metrics` listens on' }),
  dashboardWrite: setting({
    variable: 'SALESYNC_DASHBOARD_WRITE',
    schema: flag,
    default: false,
    meaning: '`true` lets bull-board retry, delete and edit jobs',
  }),
  dashboardUser: setting<string | null>({
    variable: 'SALESYNC_DASHBOARD_USER',
    schema: text,
    default: null,
    meaning: 'with the password, bull-board asks for this user (basic auth)',
  }),
  dashboardPassword: setting<string | null>({
    variable: 'SALESYNC_DASHBOARD_PASSWORD',
    schema: text,
    default: null,
    meaning: "the dashboard's password (never logged)",
    secret: true,
    verbatim: true,
  }),
  metricsTextfile: setting<string | null>({
    variable: 'SALESYNC_METRICS_TEXTFILE',
    schema: text,
    default: null,
    meaning: 'CLI runs write Prometheus metrics here (replaced atomically)',
  }),
  alertUrl: setting<string | null>({
    variable: 'SALESYNC_ALERT_URL',
    schema: httpUrl,
    default: null,
    meaning: 'one JSON POST when a run fails or `status --check` finds a problem',
    secret: true,
  }),
  maxAgeMs: setting({
    variable: 'SALESYNC_MAX_AGE',
    schema: positiveDuration,
    default: 25 * HOUR,
    defaultText: '`25h`',
    meaning: '`status --check`: a resource whose last completed walk is older is stale',
  }),
} as const;

export type SettingName = keyof typeof SETTINGS;

/** One field per setting, typed by its schema. */
export type SettingValues = { -readonly [K in SettingName]: (typeof SETTINGS)[K] extends Setting<infer T> ? T : never };

/**
 * Everything salesync can be told, in one object: the settings, plus the property policy (structured, so only in
 * the configuration file's `properties`) and its HMAC secret (SALESYNC_HASH_KEY, only from the environment, and
 * never in the README's table of settings a file may hold).
 */
export type Config = SettingValues & { propertyPolicy: PropertyPolicy; hashKey: string | null };

/** The README's default cell of a setting. */
export function defaultText(spec: Setting<unknown>): string {
  if (spec.defaultText !== undefined) return spec.defaultText;
  if (spec.default === null) return '—';
  return `\`${String(spec.default)}\``;
}

/** The README's configuration table, rendered from the settings (a test holds the README to it). */
export function configurationTable(): string {
  const rows = Object.values(SETTINGS).map((spec: Setting<unknown>) => `| \`${spec.variable}\` | ${defaultText(spec)} | ${spec.meaning} |`);
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/**
 * A flag's help from the setting it overrides: what it is (the setting's meaning unless `what` says it for the
 * flag), its variable and its default, e.g. `resources walked at once (env SALESYNC_CONCURRENCY, default 3)`.
 */
export function flagHelp(name: SettingName, what?: string): string {
  const spec: Setting<unknown> = SETTINGS[name];
  const plain = (text: string) => text.replace(/`/g, '');
  return `${plain(what ?? spec.meaning)} (env ${spec.variable}, default ${plain(defaultText(spec))})`;
}
