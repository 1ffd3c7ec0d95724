import { ConfigError } from './core/errors.js';
import { parseDurationMs } from './core/time.js';

/**
 * Everything salesync can be told, in one object. `loadConfig` is the one place that reads the environment;
 * everything else receives a Config (or the part of it it needs).
 */
export interface Config {
  /** SALES_API_BASE_URL: the service, without `/v1`. */
  baseUrl: string | null;
  /** SALES_API_KEY: one key, or several keys of the organization separated by commas (a pool). Never logged. */
  apiKey: string | null;
  /** WAREHOUSE_PATH. @defaultValue ./data/warehouse.duckdb */
  warehousePath: string;
  /** LOG_LEVEL. @defaultValue info */
  logLevel: string;
  /** SALESYNC_LOOKBACK: how far before the watermark each incremental walk starts. @defaultValue 5m */
  lookbackMs: number;
  /** SALESYNC_CONCURRENCY: resources walked at once. @defaultValue 3 */
  resourceConcurrency: number;
  /** SALESYNC_DETAIL_CONCURRENCY: single-record GETs (meeting-log summaries) in flight per walk. @defaultValue 8 */
  detailConcurrency: number;
  /** SALES_API_RATE_LIMIT: requests per minute per key. @defaultValue 1000 */
  perKeyPerMinute: number;
  /** SALES_API_ORG_RATE_LIMIT: requests per minute for the organization. @defaultValue 5000 */
  perOrgPerMinute: number;
  /** SALESYNC_FLUSH_ROWS: rows buffered before one warehouse commit. @defaultValue 2000 */
  flushRows: number;
  /** SALESYNC_FLUSH_INTERVAL: longest a fetched page waits for its commit. @defaultValue 5s */
  flushIntervalMs: number;
  /** SALES_API_TIMEOUT: per-request timeout. @defaultValue 30s */
  requestTimeoutMs: number;
  /** SALES_API_RETRIES: retries of a failed request (network, timeout, 5xx, malformed body) before giving up. @defaultValue 5 */
  retryLimit: number;
  /** SALES_API_RETRY_DELAY: first backoff delay, doubled each retry with full jitter. @defaultValue 500ms */
  retryBaseDelayMs: number;
  /** SALESYNC_LINGER: how long a run keeps the warehouse file open after a write, for its next one. @defaultValue 500ms */
  lingerMs: number;
  /**
   * SALESYNC_DUCKDB_MEMORY: DuckDB's memory limit in this process (`256MB`, `1GB`); past it, DuckDB evicts
   * cached blocks and spills to temporary files instead of growing with the file. @defaultValue null: 256MB,
   * raised for a batch into a table of many property columns or holding a record over 16 MiB (`automaticMemoryLimit`)
   */
  warehouseMemoryLimit: string | null;
  /** SALESYNC_LOCK_TIMEOUT: how long a writer waits for a warehouse file held by another process. @defaultValue 5m */
  lockTimeoutMs: number;
  /**
   * WAREHOUSE_SNAPSHOT_PATH: after each successful sync, a read-only copy of the warehouse is published here
   * (replaced atomically) for BI tools to hold open. @defaultValue null (no snapshot)
   */
  snapshotPath: string | null;
  /**
   * SALESYNC_PUBLISH_MODE: file mode of the published warehouse (WAREHOUSE_PATH), octal. The writer's own file
   * (`.salesync/` beside it) stays 0600 in a 0700 directory. @defaultValue 0640
   */
  publishMode: number;
  /** SALESYNC_PUBLISH_GROUP: group (name or gid) of the published warehouse, e.g. `analysts`. @defaultValue null: the owner's */
  publishGroup: string | null;
  /** SALESYNC_PUBLISH_EVERY: during a long walk, publish WAREHOUSE_PATH at most this often (also at each run's end); 0: run ends only. @defaultValue 5m */
  publishEveryMs: number;
  /** SALESYNC_SUMMARIES_WINDOW: `summaries` re-fetches logs created this long before the server's now. @defaultValue 14d */
  summariesWindowMs: number;
  /**
   * SALESYNC_SUMMARIES_FINAL: summary statuses the operator declares final (comma-separated): a log whose summaries
   * all have one is not re-read. @defaultValue null: settledness is learned (re-reads spaced ever further apart)
   */
  summariesFinalStatuses: string[] | null;
  /**
   * SALESYNC_SUMMARIES_RECHECK: how long after a read that found a log's summaries changed (or a first read) they
   * are read again; each unchanged read doubles it, until the log leaves the window. @defaultValue 1h
   */
  summariesRecheckMs: number;
  /** SALESYNC_MAX_PASSES: passes over one window before a walk that keeps seeing the list move waits for the next run. @defaultValue 3 */
  maxPasses: number;
  /**
   * SALESYNC_DELETE_SHARE: share of a table's live rows a reconcile may mark deleted at once; more asks for
   * `reconcile --force`. @defaultValue 0.1
   */
  deleteShare: number;
  /** REDIS_URL: when set, processes share the rate limiter, leases and the job queue through this Redis. */
  redisUrl: string | null;
  /** REDIS_PREFIX: prefix of every Redis key salesync writes (queue, leases, limiter). @defaultValue salesync */
  redisPrefix: string;
  /** SALESYNC_BACKFILL_SHARE: most of the organization's rate a backfill may use, 0–1. @defaultValue 0.5 */
  backfillShare: number;
  /** SALESYNC_SUMMARIES_SHARE: most of the organization's rate the summaries job may use, 0–1. @defaultValue 0.25 */
  summariesShare: number;
  /** SALESYNC_TIMEZONE: time zone of cron schedules (the nightly reconcile). @defaultValue UTC */
  timezone: string;
  /** SALESYNC_WORKER_CONCURRENCY: jobs a worker runs at once. @defaultValue 3 */
  workerConcurrency: number;
  /** SALESYNC_DASHBOARD_PORT: bull-board served by `worker`; 0 disables. @defaultValue 3000 */
  dashboardPort: number;
  /** SALESYNC_METRICS_PORT: Prometheus `/metrics` served by `worker`; 0 disables. @defaultValue 9464 */
  metricsPort: number;
  /** SALESYNC_SYNC_EVERY: how often `schedule` walks each record resource incrementally. @defaultValue 15m */
  syncEveryMs: number;
  /** SALESYNC_USERS_EVERY: how often `schedule` refreshes users. @defaultValue 1h */
  usersEveryMs: number;
  /** SALESYNC_SUMMARIES_EVERY: how often `schedule` runs the summaries job. @defaultValue 1h */
  summariesEveryMs: number;
  /** SALESYNC_RECONCILE_CRON: when `schedule` runs the reconcile sweep, in SALESYNC_TIMEZONE. @defaultValue 0 3 * * * */
  reconcileCron: string;
  /** SALESYNC_LEASE_TTL: how long a lease outlives a holder that stopped renewing it (a crash). @defaultValue 30s */
  leaseTtlMs: number;
  /** SALESYNC_LEASE_WAIT: how long a manual sync waits for a resource another process is walking. @defaultValue 2m */
  leaseWaitMs: number;
  /**
   * SALESYNC_REDIS_TIMEOUT: how long a command (or a starting worker) waits for REDIS_URL to answer before it
   * fails with `redis_unavailable`. @defaultValue 10s
   */
  redisTimeoutMs: number;
  /** SALESYNC_DASHBOARD_HOST: the address bull-board listens on. @defaultValue 127.0.0.1 (this host only) */
  dashboardHost: string;
  /** SALESYNC_METRICS_HOST: the address `/metrics` listens on. @defaultValue 127.0.0.1 (this host only) */
  metricsHost: string;
  /** SALESYNC_DASHBOARD_WRITE: let bull-board retry, delete and edit jobs (`true`). @defaultValue false (read-only) */
  dashboardWrite: boolean;
  /** SALESYNC_DASHBOARD_USER: with SALESYNC_DASHBOARD_PASSWORD, bull-board asks for this user (HTTP basic auth). @defaultValue null */
  dashboardUser: string | null;
  /** SALESYNC_DASHBOARD_PASSWORD: the dashboard's password (never logged). @defaultValue null */
  dashboardPassword: string | null;
  /**
   * SALESYNC_METRICS_TEXTFILE: after each CLI sync, reconcile, backfill and summaries run, write the metrics to
   * this file (Prometheus text format, replaced atomically) for node_exporter's textfile collector. @defaultValue null
   */
  metricsTextfile: string | null;
  /**
   * SALESYNC_ALERT_URL: a run that fails, or `status --check` that finds a problem, POSTs one JSON alert here.
   * Never logged (it may hold a token). @defaultValue null
   */
  alertUrl: string | null;
  /** SALESYNC_MAX_AGE: `status --check` reports a resource whose last completed walk is older. @defaultValue 25h */
  maxAgeMs: number;
}

export const DEFAULT_CONFIG: Config = {
  baseUrl: null,
  apiKey: null,
  warehousePath: './data/warehouse.duckdb',
  logLevel: 'info',
  lookbackMs: 5 * 60_000,
  resourceConcurrency: 3,
  detailConcurrency: 8,
  perKeyPerMinute: 1000,
  perOrgPerMinute: 5000,
  flushRows: 2000,
  flushIntervalMs: 5000,
  requestTimeoutMs: 30_000,
  retryLimit: 5,
  retryBaseDelayMs: 500,
  lingerMs: 500,
  warehouseMemoryLimit: null,
  lockTimeoutMs: 5 * 60_000,
  snapshotPath: null,
  publishMode: 0o640,
  publishGroup: null,
  publishEveryMs: 5 * 60_000,
  summariesWindowMs: 14 * 24 * 60 * 60_000,
  summariesFinalStatuses: null,
  summariesRecheckMs: 60 * 60_000,
  maxPasses: 3,
  deleteShare: 0.1,
  redisUrl: null,
  redisPrefix: 'salesync',
  backfillShare: 0.5,
  summariesShare: 0.25,
  timezone: 'UTC',
  workerConcurrency: 3,
  dashboardPort: 3000,
  metricsPort: 9464,
  syncEveryMs: 15 * 60_000,
  usersEveryMs: 60 * 60_000,
  summariesEveryMs: 60 * 60_000,
  reconcileCron: '0 3 * * *',
  leaseTtlMs: 30_000,
  leaseWaitMs: 2 * 60_000,
  redisTimeoutMs: 10_000,
  dashboardHost: '127.0.0.1',
  metricsHost: '127.0.0.1',
  dashboardWrite: false,
  dashboardUser: null,
  dashboardPassword: null,
  metricsTextfile: null,
  alertUrl: null,
  // A day and an hour: a nightly cron's resource is stale once a run is late, not while one is under way.
  maxAgeMs: 25 * 60 * 60_000,
};

/** Levels LOG_LEVEL and `--log-level` accept (pino's). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

type Env = Record<string, string | undefined>;

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

function integer(env: Env, name: string, min: number): number | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new ConfigError('invalid_config', `${name} must be a whole number of at least ${min} (got "${raw}")`, { name });
  }
  return value;
}

function duration(env: Env, name: string): number | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  const value = parseDurationMs(raw);
  if (value === null) {
    throw new ConfigError('invalid_config', `${name} must be a duration such as 300, 90s, 5m or 1h (got "${raw}")`, { name });
  }
  return value;
}

function list(env: Env, name: string): string[] | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  const values = raw.split(',').map((v) => v.trim()).filter((v) => v.length > 0);
  if (values.length === 0) throw new ConfigError('invalid_config', `${name} must list at least one value, comma-separated (got "${raw}")`, { name });
  return values;
}

/** A DuckDB memory size such as `128MB`, `1.5GB` or `512MiB`. */
function memorySize(env: Env, name: string): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  if (!/^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(raw)) {
    throw new ConfigError('invalid_config', `${name} must be a size such as 128MB or 1GB (got "${raw}")`, { name });
  }
  return raw;
}

/** An octal file mode such as 0640 or 640 (the owner must keep read and write: the writer replaces the file). */
function fileMode(env: Env, name: string): number | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  const value = /^0?[0-7]{3}$/.test(raw) ? parseInt(raw, 8) : NaN;
  if (Number.isNaN(value) || (value & 0o600) !== 0o600) {
    throw new ConfigError('invalid_config', `${name} must be an octal file mode that the owner can read and write, such as 0640 (got "${raw}")`, { name });
  }
  return value;
}

function fraction(env: Env, name: string): number | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!(value > 0 && value <= 1)) {
    throw new ConfigError('invalid_config', `${name} must be a share above 0 and at most 1, such as 0.5 (got "${raw}")`, { name });
  }
  return value;
}

function logLevel(env: Env, name: string): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  const level = raw.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new ConfigError('invalid_config', `${name} must be one of ${LOG_LEVELS.join(', ')} (got "${raw}")`, { name });
  }
  return level;
}

function flag(env: Env, name: string): boolean | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  if (/^(true|1|yes|on)$/i.test(raw)) return true;
  if (/^(false|0|no|off)$/i.test(raw)) return false;
  throw new ConfigError('invalid_config', `${name} must be true or false (got "${raw}")`, { name });
}

/** An address to listen on: a host name or an IP (never a URL or a port). */
function host(env: Env, name: string): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  if (!/^[A-Za-z0-9.:_-]+$/.test(raw) || raw.includes('://')) {
    throw new ConfigError('invalid_config', `${name} must be an address to listen on, such as 127.0.0.1 or 0.0.0.0 (got "${raw}")`, { name });
  }
  return raw;
}

/** An http(s) URL; its value is never echoed (a webhook URL often carries a token). */
function httpUrl(env: Env, name: string): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ConfigError('invalid_config', `${name} must be an http:// or https:// URL`, { name });
  }
  return raw;
}

/** A duration of at least one millisecond (a timeout of 0 would fail every command at once). */
function positiveDuration(env: Env, name: string): number | undefined {
  const value = duration(env, name);
  if (value !== undefined && value < 1) {
    throw new ConfigError('invalid_config', `${name} must be a duration above zero, such as 10s (got "${env[name]?.trim()}")`, { name });
  }
  return value;
}

function defined<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Defaults, then the environment, then explicit overrides (flags). Pure: pass `process.env` in. */
export function loadConfig(env: Env, overrides: Partial<Config> = {}): Config {
  const fromEnv = defined({
    baseUrl: text(env, 'SALES_API_BASE_URL'),
    apiKey: text(env, 'SALES_API_KEY'),
    warehousePath: text(env, 'WAREHOUSE_PATH'),
    logLevel: logLevel(env, 'LOG_LEVEL'),
    lookbackMs: duration(env, 'SALESYNC_LOOKBACK'),
    resourceConcurrency: integer(env, 'SALESYNC_CONCURRENCY', 1),
    detailConcurrency: integer(env, 'SALESYNC_DETAIL_CONCURRENCY', 1),
    perKeyPerMinute: integer(env, 'SALES_API_RATE_LIMIT', 1),
    perOrgPerMinute: integer(env, 'SALES_API_ORG_RATE_LIMIT', 1),
    flushRows: integer(env, 'SALESYNC_FLUSH_ROWS', 1),
    flushIntervalMs: duration(env, 'SALESYNC_FLUSH_INTERVAL'),
    requestTimeoutMs: duration(env, 'SALES_API_TIMEOUT'),
    retryLimit: integer(env, 'SALES_API_RETRIES', 0),
    retryBaseDelayMs: duration(env, 'SALES_API_RETRY_DELAY'),
    lingerMs: duration(env, 'SALESYNC_LINGER'),
    warehouseMemoryLimit: memorySize(env, 'SALESYNC_DUCKDB_MEMORY'),
    lockTimeoutMs: duration(env, 'SALESYNC_LOCK_TIMEOUT'),
    snapshotPath: text(env, 'WAREHOUSE_SNAPSHOT_PATH'),
    publishMode: fileMode(env, 'SALESYNC_PUBLISH_MODE'),
    publishGroup: text(env, 'SALESYNC_PUBLISH_GROUP'),
    publishEveryMs: duration(env, 'SALESYNC_PUBLISH_EVERY'),
    summariesWindowMs: duration(env, 'SALESYNC_SUMMARIES_WINDOW'),
    summariesFinalStatuses: list(env, 'SALESYNC_SUMMARIES_FINAL'),
    summariesRecheckMs: duration(env, 'SALESYNC_SUMMARIES_RECHECK'),
    maxPasses: integer(env, 'SALESYNC_MAX_PASSES', 1),
    deleteShare: fraction(env, 'SALESYNC_DELETE_SHARE'),
    redisUrl: text(env, 'REDIS_URL'),
    redisPrefix: text(env, 'REDIS_PREFIX'),
    backfillShare: fraction(env, 'SALESYNC_BACKFILL_SHARE'),
    summariesShare: fraction(env, 'SALESYNC_SUMMARIES_SHARE'),
    timezone: text(env, 'SALESYNC_TIMEZONE'),
    workerConcurrency: integer(env, 'SALESYNC_WORKER_CONCURRENCY', 1),
    dashboardPort: integer(env, 'SALESYNC_DASHBOARD_PORT', 0),
    metricsPort: integer(env, 'SALESYNC_METRICS_PORT', 0),
    syncEveryMs: duration(env, 'SALESYNC_SYNC_EVERY'),
    usersEveryMs: duration(env, 'SALESYNC_USERS_EVERY'),
    summariesEveryMs: duration(env, 'SALESYNC_SUMMARIES_EVERY'),
    reconcileCron: text(env, 'SALESYNC_RECONCILE_CRON'),
    leaseTtlMs: duration(env, 'SALESYNC_LEASE_TTL'),
    leaseWaitMs: duration(env, 'SALESYNC_LEASE_WAIT'),
    redisTimeoutMs: positiveDuration(env, 'SALESYNC_REDIS_TIMEOUT'),
    dashboardHost: host(env, 'SALESYNC_DASHBOARD_HOST'),
    metricsHost: host(env, 'SALESYNC_METRICS_HOST'),
    dashboardWrite: flag(env, 'SALESYNC_DASHBOARD_WRITE'),
    dashboardUser: text(env, 'SALESYNC_DASHBOARD_USER'),
    dashboardPassword: env.SALESYNC_DASHBOARD_PASSWORD ? env.SALESYNC_DASHBOARD_PASSWORD : undefined,
    metricsTextfile: text(env, 'SALESYNC_METRICS_TEXTFILE'),
    alertUrl: httpUrl(env, 'SALESYNC_ALERT_URL'),
    maxAgeMs: positiveDuration(env, 'SALESYNC_MAX_AGE'),
  });
  if ((fromEnv.dashboardUser === undefined) !== (fromEnv.dashboardPassword === undefined)) {
    throw new ConfigError(
      'invalid_config',
      'SALESYNC_DASHBOARD_USER and SALESYNC_DASHBOARD_PASSWORD go together: set both to protect the dashboard, or neither',
      { name: fromEnv.dashboardUser === undefined ? 'SALESYNC_DASHBOARD_USER' : 'SALESYNC_DASHBOARD_PASSWORD' },
    );
  }
  return { ...DEFAULT_CONFIG, ...fromEnv, ...defined(overrides) };
}

/** The connection settings a sync cannot run without. */
export function requireService(config: Config): { baseUrl: string; apiKey: string; apiKeys: string[] } {
  if (!config.baseUrl) {
    throw new ConfigError(
      'missing_base_url',
      'SALES_API_BASE_URL is not set: set it to the service address (e.g. https://sales.example.com), or run `salesync demo`',
    );
  }
  if (!/^https?:\/\/[^/\s]+/i.test(config.baseUrl)) {
    throw new ConfigError('invalid_base_url', `SALES_API_BASE_URL must be an http(s) URL (got "${config.baseUrl}")`);
  }
  if (!config.apiKey) {
    throw new ConfigError(
      'missing_api_key',
      'SALES_API_KEY is not set: set it to a key issued in the service administration screen (a read key is enough)',
    );
  }
  // Several keys, comma-separated: a pool of the same organization (each key's format is checked by the client).
  const apiKeys = config.apiKey.split(',').map((key) => key.trim()).filter((key) => key.length > 0);
  return { baseUrl: config.baseUrl.replace(/\/+$/, ''), apiKey: apiKeys[0] ?? config.apiKey, apiKeys };
}
