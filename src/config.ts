import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, shown } from './core/errors.js';
import { HASH_KEY_VARIABLE, MIN_HASH_KEY_LENGTH, parsePropertyPolicy, policyHashes, type PropertyPolicy } from './core/property-policy.js';
import { SETTINGS, type Config, type Setting, type SettingName } from './settings.js';

export { LOG_LEVELS, SETTINGS, type Config } from './settings.js';

/** Every setting at its default. */
export const DEFAULT_CONFIG: Config = {
  ...(Object.fromEntries(Object.entries(SETTINGS).map(([name, spec]) => [name, spec.default])) as Omit<
    Config,
    'propertyPolicy' | 'hashKey'
  >),
  propertyPolicy: {},
  hashKey: null,
};

/** The configuration file's key holding the property policy (the only key that is not a setting's variable). */
export const PROPERTY_POLICY_KEY = 'properties';

/** The configuration file read when SALESYNC_CONFIG names none: in the directory salesync runs in. */
export const CONFIG_FILE_NAME = 'salesync.config.json';

type Env = Record<string, string | undefined>;

export interface LoadConfigOptions {
  /** Reads the configuration file; a missing file throws ENOENT. @defaultValue fs.readFileSync as UTF-8 */
  readFile?: (path: string) => string;
  /** Where `salesync.config.json` is looked for. @defaultValue process.cwd() */
  cwd?: string;
}

/** One setting's text, read by its schema; a wrong value is a one-line `invalid_config` naming where it came from. */
function readSetting<T>(spec: Setting<T>, raw: string, source: string): T {
  const result = spec.schema.safeParse(raw);
  if (result.success) return result.data;
  const problem = result.error.issues[0]?.message ?? 'is not valid';
  // A secret is never echoed, nor anything shaped like a key: one pasted into the wrong variable must not reach a log.
  const got = spec.secret ? '' : ` (got ${shown(raw)})`;
  throw new ConfigError('invalid_config', `${spec.variable}${source} ${problem}${got}`, { name: spec.variable });
}

/** The settings a source sets (blank values are unset), read and checked. */
function readSource(values: Record<string, string | undefined>, source: string): Partial<Config> {
  const read: Partial<Record<SettingName, unknown>> = {};
  for (const [name, spec] of Object.entries(SETTINGS) as [SettingName, Setting<unknown>][]) {
    const value = values[spec.variable];
    if (value === undefined) continue;
    // Passwords keep their spaces; everything else is trimmed, and blank means unset.
    const raw = spec.verbatim ? value : value.trim();
    if (raw.trim() === '') continue;
    read[name] = readSetting(spec, raw, source);
  }
  return read as Partial<Config>;
}

/** The nearest variable name, for a misspelt key. */
function nearestVariable(key: string): string | null {
  const upper = key.toUpperCase();
  const variables = Object.values(SETTINGS).map((s) => s.variable);
  return variables.find((v) => v === upper) ?? variables.find((v) => v.includes(upper) || upper.includes(v)) ?? null;
}

/** The configuration file as a JSON object, or null when there is none. */
function readConfigObject(path: string, readFile: (path: string) => string): Record<string, unknown> | null {
  let text: string;
  try {
    text = readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ConfigError(
      'invalid_config_file',
      `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'}): check its permissions`,
      { path },
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    // JSON.parse quotes the text around the fault, which may hold a key: only where it is.
    const at = /at position \d+(?: \(line \d+ column \d+\))?/.exec((error as Error).message)?.[0] ?? 'unreadable';
    throw new ConfigError('invalid_config_file', `${path} is not valid JSON (${at}): fix it, or move it away`, {
      path,
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError('invalid_config_file', `${path} must hold one JSON object of settings, e.g. {"SALESYNC_CONCURRENCY": 4}`, {
      path,
    });
  }
  return parsed as Record<string, unknown>;
}

/**
 * The configuration file: a JSON object whose keys are the settings' variables (`"SALESYNC_CONCURRENCY": 4`),
 * with string, number or boolean values (a list may be an array), and the property policy under `properties`
 * (see docs/property-policy.md). Null when there is none.
 */
export function readConfigFile(path: string, readFile: (path: string) => string): Record<string, string> | null {
  const parsed = readConfigObject(path, readFile);
  if (parsed === null) return null;
  return settingsOfFile(parsed, path);
}

function settingsOfFile(parsed: Record<string, unknown>, path: string): Record<string, string> {
  const known = new Set(Object.values(SETTINGS).map((s) => s.variable));
  const values: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (key === PROPERTY_POLICY_KEY) continue;
    if (key === HASH_KEY_VARIABLE) {
      // A secret in a file beside the warehouse is a secret copied with it: the environment only.
      throw new ConfigError('invalid_config_file', `${path}: ${HASH_KEY_VARIABLE} is read from the environment only: move it there`, {
        path,
        key,
      });
    }
    if (!known.has(key)) {
      const nearest = nearestVariable(key);
      throw new ConfigError(
        'invalid_config_file',
        `${path}: unknown setting ${shown(key)}${nearest ? `: did you mean "${nearest}"?` : ": the README's configuration table lists them"}`,
        { path, key },
      );
    }
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') values[key] = String(value);
    else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) values[key] = value.join(',');
    else if (value !== null)
      throw new ConfigError('invalid_config_file', `${path}: ${key} must be a string, a number or true/false`, { path, key });
  }
  return values;
}

/**
 * Defaults, then the configuration file (SALESYNC_CONFIG, or `salesync.config.json` in the working directory when
 * present), then the environment, then explicit overrides (flags). Pass `process.env` in.
 */
export function loadConfig(env: Env, overrides: Partial<Config> = {}, options: LoadConfigOptions = {}): Config {
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const named = env.SALESYNC_CONFIG?.trim();
  const path = named ? resolve(options.cwd ?? process.cwd(), named) : resolve(options.cwd ?? process.cwd(), CONFIG_FILE_NAME);
  const document = readConfigObject(path, readFile);
  const file = document === null ? null : settingsOfFile(document, path);
  if (named && file === null) {
    throw new ConfigError('invalid_config_file', `SALESYNC_CONFIG names ${path}, which does not exist: fix the path or unset it`, { path });
  }
  const fromFile = file ? readSource(file, ` in ${path}`) : {};
  const fromEnv = readSource(env, '');
  const propertyPolicy: PropertyPolicy = document === null ? {} : parsePropertyPolicy(document[PROPERTY_POLICY_KEY], path);
  const hashKey = env[HASH_KEY_VARIABLE] === undefined || env[HASH_KEY_VARIABLE] === '' ? null : env[HASH_KEY_VARIABLE];
  const merged = { ...DEFAULT_CONFIG, propertyPolicy, hashKey, ...fromFile, ...fromEnv, ...defined(overrides) };
  if ((merged.dashboardUser === null) !== (merged.dashboardPassword === null)) {
    throw new ConfigError(
      'invalid_config',
      'SALESYNC_DASHBOARD_USER and SALESYNC_DASHBOARD_PASSWORD go together: set both to protect the dashboard, or neither',
      { name: merged.dashboardUser === null ? 'SALESYNC_DASHBOARD_USER' : 'SALESYNC_DASHBOARD_PASSWORD' },
    );
  }
  return merged;
}

function defined<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
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
    // The value is never repeated: an API key pasted here by mistake would end up in logs and alerts.
    throw new ConfigError(
      'invalid_base_url',
      /sk_[A-Za-z0-9]{8,}/i.test(config.baseUrl)
        ? 'SALES_API_BASE_URL holds what looks like an API key (not shown): put the key in SALES_API_KEY, and the service address (e.g. https://sales.example.com) in SALES_API_BASE_URL'
        : 'SALES_API_BASE_URL must be an http(s) URL such as https://sales.example.com: the value set does not start with http:// or https:// (not shown, in case it is a secret)',
      { setting: 'SALES_API_BASE_URL' },
    );
  }
  if (!config.apiKey) {
    throw new ConfigError(
      'missing_api_key',
      'SALES_API_KEY is not set: set it to a key issued in the service administration screen (a read key is enough)',
    );
  }
  // Several keys, comma-separated: a pool of the same organization (each key's format is checked by the client).
  const apiKeys = config.apiKey
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key.length > 0);
  return { baseUrl: config.baseUrl.replace(/\/+$/, ''), apiKey: apiKeys[0] ?? config.apiKey, apiKeys };
}

/**
 * The property policy's secret, for a run that applies the policy: a policy that hashes needs SALESYNC_HASH_KEY
 * (one-line `missing_hash_key`, exit 2, naming it). The secret is never echoed.
 */
export function requireHashKey(config: Config): void {
  if (!policyHashes(config.propertyPolicy)) return;
  if (config.hashKey === null) {
    throw new ConfigError(
      'missing_hash_key',
      `${HASH_KEY_VARIABLE} is not set: the property policy hashes properties, and needs a secret of at least ${MIN_HASH_KEY_LENGTH} characters in it (keep it, or equal values will no longer hash equal)`,
      { name: HASH_KEY_VARIABLE },
    );
  }
  if (config.hashKey.length < MIN_HASH_KEY_LENGTH) {
    throw new ConfigError('invalid_config', `${HASH_KEY_VARIABLE} must be at least ${MIN_HASH_KEY_LENGTH} characters (not shown)`, {
      name: HASH_KEY_VARIABLE,
    });
  }
}
