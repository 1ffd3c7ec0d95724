import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, loadConfig, requireService } from '../../src/config.js';

describe('loadConfig', () => {
  it('uses defaults when the environment is empty', () => {
    expect(loadConfig({})).toEqual(DEFAULT_CONFIG);
  });
  it('reads the environment, and flags override it', () => {
    const config = loadConfig({ WAREHOUSE_PATH: '/tmp/a.duckdb', SALESYNC_LOOKBACK: '2m' }, { warehousePath: '/tmp/b.duckdb' });
    expect(config.warehousePath).toBe('/tmp/b.duckdb');
    expect(config.lookbackMs).toBe(120_000);
  });
  it('names the variable when a value is malformed', () => {
    expect(() => loadConfig({ SALESYNC_CONCURRENCY: 'many' })).toThrow(/SALESYNC_CONCURRENCY/);
  });
  it('says what to set when the service address or key is missing', () => {
    expect(() => requireService(loadConfig({}))).toThrow(/SALES_API_BASE_URL is not set/);
    expect(() => requireService(loadConfig({ SALES_API_BASE_URL: 'http://x' }))).toThrow(/SALES_API_KEY is not set/);
  });
});
