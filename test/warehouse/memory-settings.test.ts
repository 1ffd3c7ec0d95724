/**
 * The DuckDB settings a writer opens with, which bound the memory a sync holds beside its JS heap: one thread
 * (one `read_json` buffer, fewer allocator arenas), jemalloc's background purging and smaller row groups (what a
 * checkpoint compresses at once); readers keep DuckDB's own threads.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DuckDBConnection } from '@duckdb/node-api';
import { withDatabase } from '../../src/warehouse/connection.js';
import { readMemoryLimitMb } from '../../src/warehouse/memory-limit.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'salesync-memory-settings-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function setting(connection: DuckDBConnection, name: string): Promise<string> {
  const reader = await connection.runAndReadAll(`SELECT current_setting('${name}')::VARCHAR AS v`);
  return String(reader.getRowObjects()[0]!.v);
}

describe('DuckDB settings at open', () => {
  it("a writer opens DuckDB with one thread and jemalloc's background thread", async () => {
    const path = join(dir, 'w.duckdb');
    const opened = await withDatabase({ path, access: 'write', lockTimeoutMs: 1000 }, async (c) => ({
      threads: await setting(c, 'threads'),
      background: await setting(c, 'allocator_background_threads'),
    }));
    expect(opened).toEqual({ threads: '1', background: 'true' });
  });

  it('a writer puts 32,768 rows in a row group and spills beside the file; a reader then reads every row', async () => {
    const path = join(dir, 'w.duckdb');
    const written = await withDatabase({ path, access: 'write', lockTimeoutMs: 1000 }, async (c) => {
      await c.run('CREATE TABLE t AS SELECT range AS n FROM range(40000)');
      return {
        temp: await setting(c, 'temp_directory'),
        catalog: (await c.runAndReadAll('SELECT current_database() AS d')).getRowObjects()[0]!.d,
      };
    });
    expect(written).toEqual({
      temp: expect.stringMatching(new RegExp(`^${dir}/w\\.duckdb\\.tmp-${process.pid}-[0-9a-f]{6}$`)),
      catalog: 'warehouse',
    });
    const read = await withDatabase({ path, access: 'read', lockTimeoutMs: 1000 }, async (c) => {
      const reader = await c.runAndReadAll(
        `SELECT (SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('t'))::INTEGER AS groups, (SELECT count(*) FROM t)::INTEGER AS rows`,
      );
      return reader.getRowObjects()[0];
    });
    // DuckDB's default (122,880 rows) would hold the 40,000 in one.
    expect(read).toEqual({ groups: 2, rows: 40000 });
    expect(existsSync(`${path}.wal`)).toBe(false);
  });

  it("a read-only session keeps DuckDB's own thread count", async () => {
    const path = join(dir, 'w.duckdb');
    await withDatabase({ path, access: 'write', lockTimeoutMs: 1000 }, async () => undefined);
    const threads = await withDatabase({ path, access: 'read', lockTimeoutMs: 1000 }, (c) => setting(c, 'threads'));
    expect(threads).toBe(String(cpus().length));
  });
});

describe('memory limits by what a session does', () => {
  it('a query reads at half the memory the process may use (at least 256MB) while commits of a narrow table run at 96MB', async () => {
    const { openWarehouse } = await import('../../src/warehouse/index.js');
    const warehouse = openWarehouse({ path: join(dir, 'w.duckdb'), lockTimeoutMs: 1000 });
    try {
      await warehouse.commitBatch('deals', {
        records: [{ id: 'D00000000000000001', created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z', properties: {} }],
        checkpoint: { cursor: null, updatedAfter: null, startedAt: '2026-01-01T00:00:00Z', mode: 'full' },
      });
      const [row] = await warehouse.query(`SELECT current_setting('memory_limit') AS m`);
      // DuckDB counts MB in thousands and prints MiB or GiB, rounded (96MB would be 91.5 MiB).
      const [, amount, unit] = /^([\d.]+) (MiB|GiB)$/.exec(String(row!.m))!;
      const bytes = Number(amount) * 2 ** (unit === 'GiB' ? 30 : 20);
      expect(Math.abs(bytes / (readMemoryLimitMb() * 1e6) - 1)).toBeLessThan(0.01);
      expect(readMemoryLimitMb(512 * 2 ** 20)).toBe(256);
      expect(readMemoryLimitMb(8 * 2 ** 30)).toBe(4096);
    } finally {
      await warehouse.close();
    }
  });
});
