import { ConfigError } from './core/errors.js';
import { parseDurationMs } from './core/time.js';

/**
 * Everything salesync can be told, in one object. `loadConfig` is the one place that reads the environment;
 * everything else receives a Config (or the part of it it needs).
 */
export interface Config {
  /** SALES_API_BASE_URL: the service, without `/v1`. */
  baseUrl: string | null;
  /** SALES_API_KEY: one key (a later version takes several, comma-separated). Never logged. */
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
  /** SALESYNC_FLUSH_ROWS: rows buffered before one warehouse commit. @defaultValue 5000 */
  flushRows: number;
  /** SALESYNC_FLUSH_INTERVAL: longest a fetched page waits for its commit. @defaultValue 5s */
  flushIntervalMs: number;
  /** SALES_API_TIMEOUT: per-request timeout. @defaultValue 30s */
  requestTimeoutMs: number;
  /** SALES_API_RETRIES: retries of a failed request (network, timeout, 5xx, malformed body) before giving up. @defaultValue 5 */
  retryLimit: number;
  /** SALES_API_RETRY_DELAY: first backoff delay, doubled each retry with full jitter. @defaultValue 500ms */
  retryBaseDelayMs: number;
  /** SALESYNC_LOCK_TIMEOUT: how long a writer waits for a warehouse file held by another process. @defaultValue 5m */
  lockTimeoutMs: number;
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
  flushRows: 5000,
  flushIntervalMs: 5000,
  requestTimeoutMs: 30_000,
  retryLimit: 5,
  retryBaseDelayMs: 500,
  lockTimeoutMs: 5 * 60_000,
};

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

function defined<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Defaults, then the environment, then explicit overrides (flags). Pure: pass `process.env` in. */
export function loadConfig(env: Env, overrides: Partial<Config> = {}): Config {
  const fromEnv = defined({
    baseUrl: text(env, 'SALES_API_BASE_URL'),
    apiKey: text(env, 'SALES_API_KEY'),
    warehousePath: text(env, 'WAREHOUSE_PATH'),
    logLevel: text(env, 'LOG_LEVEL'),
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
    lockTimeoutMs: duration(env, 'SALESYNC_LOCK_TIMEOUT'),
  });
  return { ...DEFAULT_CONFIG, ...fromEnv, ...defined(overrides) };
}

/** The connection settings a sync cannot run without. */
export function requireService(config: Config): { baseUrl: string; apiKey: string } {
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
  return { baseUrl: config.baseUrl.replace(/\/+$/, ''), apiKey: config.apiKey };
}
