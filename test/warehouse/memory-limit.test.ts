/**
 * DuckDB's memory limit when the operator sets none: sized to the widest record table, because what a commit
 * needs grows with the number of property columns (a fixed 256MB failed the first batch of a 300-property table).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse, type WarehouseOptions } from '../../src/warehouse/index.js';
import { automaticMemoryLimit, memoryLimitMb, READ_MEMORY_LIMIT_MB } from '../../src/warehouse/memory-limit.js';
import { wideDefinitions, wideRecord } from '../../devtools/wide-records.js';

describe('memoryLimitMb', () => {
  it("reads a limit in any unit SALESYNC_DUCKDB_MEMORY takes as DuckDB's MB (powers of 1000; KiB and up of 1024)", () => {
    expect(memoryLimitMb('96MB')).toBe(96);
    expect(memoryLimitMb('1GB')).toBe(1000);
    expect(memoryLimitMb('1.5 gb')).toBe(1500);
    expect(memoryLimitMb('1GiB')).toBeCloseTo(1073.741824);
    expect(memoryLimitMb('512KiB')).toBeCloseTo(0.524288);
  });

  it('refuses what is not a size, naming it', () => {
    expect(() => memoryLimitMb('lots')).toThrow('"lots"');
    expect(() => memoryLimitMb('96XB')).toThrow('"96XB"');
  });
});

describe('automaticMemoryLimit', () => {
  const MiB = 2 ** 20;

  it("is 96MB for tables of up to 30 columns and records within read_json's default 16 MiB", () => {
    expect(automaticMemoryLimit(0)).toBe('96MB');
    expect(automaticMemoryLimit(30, 16 * MiB)).toBe('96MB');
  });

  it('grows by 17/16 MB per column past that (64 MB and 17/16 MB a column)', () => {
    expect(automaticMemoryLimit(31)).toBe('97MB');
    expect(automaticMemoryLimit(32, 16 * MiB)).toBe('98MB');
    expect(automaticMemoryLimit(160)).toBe('234MB');
    expect(automaticMemoryLimit(161)).toBe('236MB');
    expect(automaticMemoryLimit(267)).toBe('348MB');
    expect(automaticMemoryLimit(607, 16 * MiB)).toBe('709MB');
  });

  it('never goes below the floor given (reads of whole tables get 256MB however narrow the tables)', () => {
    expect(automaticMemoryLimit(30, 0, READ_MEMORY_LIMIT_MB)).toBe('256MB');
    expect(automaticMemoryLimit(607, 0, READ_MEMORY_LIMIT_MB)).toBe('709MB');
  });

  it("gives a record past read_json's default object size 96 MB, 1 MB a column and 9 MB per MB past the default", () => {
    expect(automaticMemoryLimit(8, 36 * MiB + 1)).toBe('285MB');
    expect(automaticMemoryLimit(8, 72 * MiB + 1)).toBe('609MB');
  });
});

describe('a warehouse of many property columns', () => {
  const definitions = wideDefinitions(320);
  const records = (day: number) => Array.from({ length: 2000 }, (_, n) => wideRecord(n, day, definitions));

  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-memory-limit-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** A first load and a replacement of every row, as a first sync and a later one write them. */
  async function writeTwice(options: Partial<WarehouseOptions>): Promise<number> {
    const warehouse = openWarehouse({ path: join(dir, 'w.duckdb'), lockTimeoutMs: 1000, lingerMs: 60_000, ...options });
    try {
      await warehouse.applyPropertyDefinitions('deals', definitions);
      for (const day of [1, 2]) {
        await warehouse.commitBatch('deals', {
          records: records(day),
          checkpoint: { cursor: null, updatedAfter: null, startedAt: '2026-01-01T00:00:00Z', mode: 'full' },
        });
      }
      const [row] = await warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals WHERE updated_at = '2026-01-02T00:00:00Z'`);
      return Number(row!.n);
    } finally {
      await warehouse.close();
    }
  }

  it('is written and replaced at the limit a writer sizes itself when none is set', async () => {
    expect(await writeTwice({})).toBe(2000);
  });

  it('keeps a limit the operator set as given: 256MB cannot hold those batches, and says which setting to raise', async () => {
    await expect(writeTwice({ memoryLimit: '256MB' })).rejects.toMatchObject({
      code: 'warehouse_out_of_memory',
      message: expect.stringContaining('SALESYNC_DUCKDB_MEMORY'),
    });
  });
});
