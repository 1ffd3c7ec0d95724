import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { warehouseMissing, writerPathFor } from '../../src/warehouse/index.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('a warehouse that is not there', () => {
  it('tells a reader to run a sync when nothing was ever written', () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-missing-'));
    const error = warehouseMissing(join(dir, 'warehouse.duckdb'));
    expect(error.code).toBe('warehouse_missing');
    expect(error.message).toMatch(/run `salesync sync` first/);
  });

  it('says a first sync is writing it, and when it appears, while the writer file exists but nothing is published yet', () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-missing-'));
    const published = join(dir, 'warehouse.duckdb');
    mkdirSync(dirname(writerPathFor(published)), { recursive: true });
    writeFileSync(writerPathFor(published), '');
    const error = warehouseMissing(published);
    expect(error.code).toBe('warehouse_missing');
    expect(error.message).toMatch(/a first sync is writing it .*published when a run ends, and every SALESYNC_PUBLISH_EVERY/);
    expect(error.message).not.toMatch(/run `salesync sync` first/);
  });
});
