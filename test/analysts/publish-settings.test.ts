import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { writerPathFor } from '../../src/warehouse/index.js';

describe('publishing settings', () => {
  it("default to 0640, the owner's group and a publish every 5 minutes during a long walk", () => {
    const config = loadConfig({});
    expect(config.publishMode).toBe(0o640);
    expect(config.publishGroup).toBeNull();
    expect(config.publishEveryMs).toBe(300_000);
  });

  it('read SALESYNC_PUBLISH_MODE as octal, SALESYNC_PUBLISH_GROUP and SALESYNC_PUBLISH_EVERY', () => {
    const config = loadConfig({ SALESYNC_PUBLISH_MODE: '0644', SALESYNC_PUBLISH_GROUP: 'analysts', SALESYNC_PUBLISH_EVERY: '90s' });
    expect(config.publishMode).toBe(0o644);
    expect(config.publishGroup).toBe('analysts');
    expect(config.publishEveryMs).toBe(90_000);
    expect(loadConfig({ SALESYNC_PUBLISH_MODE: '600' }).publishMode).toBe(0o600);
  });

  it('refuse a mode that is not octal or that the owner could not read and write', () => {
    for (const mode of ['0648', 'rw-r-----', '0440', '1']) {
      expect(() => loadConfig({ SALESYNC_PUBLISH_MODE: mode })).toThrow(expect.objectContaining({ code: 'invalid_config' }));
    }
  });

  it('put the writer file in an owner-only directory beside the published one', () => {
    expect(writerPathFor('./data/warehouse.duckdb')).toBe('data/.salesync/warehouse.writer.duckdb');
    expect(writerPathFor('/srv/sales/mirror')).toBe('/srv/sales/.salesync/mirror.writer.duckdb');
  });
});
