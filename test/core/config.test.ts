import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, loadConfig, requireService } from '../../src/config.js';
import { projectRoot } from '../../src/core/paths.js';
import { configurationTable, flagHelp, SETTINGS } from '../../src/settings.js';

/** A loader whose only configuration file is `files[path]`. */
function files(contents: Record<string, string>): { readFile: (path: string) => string; cwd: string } {
  return {
    cwd: '/srv/salesync',
    readFile: (path) => {
      if (path in contents) return contents[path]!;
      throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    },
  };
}

describe('loadConfig', () => {
  it('uses defaults when the environment is empty and there is no configuration file', () => {
    expect(loadConfig({}, {}, files({}))).toEqual(DEFAULT_CONFIG);
  });
  it('reads the environment, and flags override it', () => {
    const config = loadConfig({ WAREHOUSE_PATH: '/tmp/a.duckdb', SALESYNC_LOOKBACK: '2m' }, { warehousePath: '/tmp/b.duckdb' }, files({}));
    expect(config.warehousePath).toBe('/tmp/b.duckdb');
    expect(config.lookbackMs).toBe(120_000);
  });
  it('names the variable when a value is malformed', () => {
    expect(() => loadConfig({ SALESYNC_CONCURRENCY: 'many' }, {}, files({}))).toThrow(
      /^SALESYNC_CONCURRENCY must be a whole number of at least 1 \(got "many"\)$/,
    );
  });
  it('bounds durations: one a timer waits out at 24 days (and a request timeout above 0, a lease at 1s), a window at a century', () => {
    for (const [variable, value] of [
      ['SALES_API_TIMEOUT', '25d'],
      ['SALES_API_TIMEOUT', '0'],
      ['SALESYNC_REDIS_TIMEOUT', '25d'],
      ['SALESYNC_LEASE_TTL', '0'],
      ['SALESYNC_LEASE_TTL', '1e23'],
      ['SALESYNC_LOOKBACK', '99999999d'],
      ['SALESYNC_SUMMARIES_WINDOW', '40000d'],
    ]) {
      expect(() => loadConfig({ [variable!]: value! }, {}, files({})), `${variable}=${value}`).toThrow(
        new RegExp(`^${variable} must be a duration`),
      );
    }
    expect(loadConfig({ SALES_API_TIMEOUT: '24d', SALESYNC_SUMMARIES_WINDOW: '90d' }, {}, files({}))).toMatchObject({
      requestTimeoutMs: 24 * 86_400_000,
      summariesWindowMs: 90 * 86_400_000,
    });
  });
  it('never echoes the value of a secret setting that is malformed', () => {
    const webhook = 'ftp://hooks.example.com/T0KEN-abcdef';
    expect(() => loadConfig({ SALESYNC_ALERT_URL: webhook }, {}, files({}))).toThrow(
      /^SALESYNC_ALERT_URL must be an http:\/\/ or https:\/\/ URL$/,
    );
  });
  it('says what to set when the service address or key is missing', () => {
    expect(() => requireService(loadConfig({}, {}, files({})))).toThrow(/SALES_API_BASE_URL is not set/);
    expect(() => requireService(loadConfig({ SALES_API_BASE_URL: 'http://x' }, {}, files({})))).toThrow(/SALES_API_KEY is not set/);
  });
});

describe('the configuration file', () => {
  const file = '/srv/salesync/salesync.config.json';

  it('is read from the working directory, typed like the environment, and the environment and flags override it', () => {
    const contents = JSON.stringify({
      WAREHOUSE_PATH: '/data/crm.duckdb',
      SALESYNC_CONCURRENCY: 4,
      SALESYNC_DASHBOARD_WRITE: true,
      SALESYNC_LOOKBACK: '10m',
      SALESYNC_SUMMARIES_FINAL: ['done', 'failed'],
    });
    const config = loadConfig({ SALESYNC_LOOKBACK: '1m' }, { resourceConcurrency: 2 }, files({ [file]: contents }));
    expect(config).toMatchObject({
      warehousePath: '/data/crm.duckdb',
      resourceConcurrency: 2,
      dashboardWrite: true,
      lookbackMs: 60_000,
      summariesFinalStatuses: ['done', 'failed'],
    });
  });

  it('is the file SALESYNC_CONFIG names, relative to the working directory; a named file that is missing is an error', () => {
    const config = loadConfig(
      { SALESYNC_CONFIG: 'conf/prod.json' },
      {},
      files({ '/srv/salesync/conf/prod.json': '{"REDIS_PREFIX": "crm"}' }),
    );
    expect(config.redisPrefix).toBe('crm');
    expect(() => loadConfig({ SALESYNC_CONFIG: 'nope.json' }, {}, files({}))).toThrow(
      /SALESYNC_CONFIG names \/srv\/salesync\/nope\.json, which does not exist/,
    );
  });

  it('refuses an unknown key with one line that names it and the nearest setting', () => {
    expect(() => loadConfig({}, {}, files({ [file]: '{"SALESYNC_CONCURENCY": 4}' }))).toThrow(/unknown setting "SALESYNC_CONCURENCY"/);
    expect(() => loadConfig({}, {}, files({ [file]: '{"warehouse_path": "x"}' }))).toThrow(/did you mean "WAREHOUSE_PATH"\?/);
  });

  it('names the file and the variable when a value in it is malformed, and says so when it is not JSON', () => {
    expect(() => loadConfig({}, {}, files({ [file]: '{"SALESYNC_DELETE_SHARE": 2}' }))).toThrow(
      `SALESYNC_DELETE_SHARE in ${file} must be a share above 0 and at most 1, such as 0.5 (got "2")`,
    );
    expect(() => loadConfig({}, {}, files({ [file]: '{"SALESYNC_DELETE_SHARE": 0.2,}' }))).toThrow(/is not valid JSON/);
    expect(() => loadConfig({}, {}, files({ [file]: '[1]' }))).toThrow(/must hold one JSON object of settings/);
  });

  it('fails with the configuration file error code, which the CLI maps to exit 2', () => {
    try {
      loadConfig({}, {}, files({ [file]: '{"NOPE": 1}' }));
      expect.unreachable();
    } catch (error) {
      expect((error as { code: string }).code).toBe('invalid_config_file');
      expect((error as { disposition: string }).disposition).toBe('fatal');
    }
  });
});

describe('the settings table', () => {
  it('is what the README documents: every variable, its default and its meaning, in order', () => {
    const readme = readFileSync(join(projectRoot(import.meta.url), 'README.md'), 'utf8');
    const start = readme.indexOf('| variable | default | meaning |');
    const documented = readme.slice(start, readme.indexOf('\n\n', start));
    expect(documented).toBe(configurationTable());
  });

  it('gives every setting a default its own schema accepts, so a default written out in the file reads back the same', () => {
    for (const [name, spec] of Object.entries(SETTINGS)) {
      if (spec.default === null || typeof spec.default === 'number' || typeof spec.default === 'boolean') continue;
      const text = Array.isArray(spec.default) ? spec.default.join(',') : String(spec.default);
      expect(spec.schema.parse(text), name).toEqual(spec.default);
    }
  });

  it('gives a flag its help from the setting it overrides: variable and default come from the table, not from a copy', () => {
    expect(flagHelp('resourceConcurrency', 'resources walked at once')).toBe(
      'resources walked at once (env SALESYNC_CONCURRENCY, default 3)',
    );
    expect(flagHelp('reconcileCron', 'reconcile sweep')).toBe(
      `reconcile sweep (env SALESYNC_RECONCILE_CRON, default ${SETTINGS.reconcileCron.default})`,
    );
    expect(flagHelp('warehousePath')).toBe('the DuckDB file (flag --warehouse) (env WAREHOUSE_PATH, default ./data/warehouse.duckdb)');
  });
});
