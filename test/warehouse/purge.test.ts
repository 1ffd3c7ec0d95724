/**
 * `compactFile`: a DuckDB file rewritten with live data only. A deleted value no longer has a byte in the file,
 * and what the warehouse relies on survives: primary keys (ON CONFLICT upserts), views, sequences where they were
 * (history's change_seq must never go back), the owner-only mode.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, describe, expect, it } from 'vitest';
import { compactFile } from '../../src/warehouse/purge.js';

const SECRET = 'only-in-a-freed-block@example.com';
let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function withFile<T>(path: string, work: (run: (sql: string) => Promise<Record<string, unknown>[]>) => Promise<T>): Promise<T> {
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  try {
    return await work(async (sql) => (await connection.runAndReadAll(sql)).getRowObjects());
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

describe('compactFile', () => {
  it('leaves no byte of deleted data, and keeps keys, views and sequences as they were', async () => {
    dir = await mkdtemp(join(tmpdir(), 'salesync-compact-'));
    const path = join(dir, 'w.duckdb');
    await withFile(path, async (run) => {
      // The secret's table first, dropped after another was written behind it: its blocks are free, in the middle.
      await run(`CREATE TABLE dropped AS SELECT '${SECRET}' || range AS v FROM range(3)`);
      await run('CHECKPOINT');
      await run(`CREATE SEQUENCE change_seq; CREATE TABLE kv (k VARCHAR PRIMARY KEY, v VARCHAR, n BIGINT DEFAULT nextval('change_seq'))`);
      await run(`CREATE VIEW kv_view AS SELECT k FROM kv`);
      await run(`INSERT INTO kv (k, v) SELECT 'k' || range, md5(range::VARCHAR) FROM range(5000)`);
      await run('CHECKPOINT');
      await run('DROP TABLE dropped');
      await run('CHECKPOINT');
    });
    // What compaction is for: the old values are still in the file's free blocks.
    expect(readFileSync(path).includes(Buffer.from(SECRET))).toBe(true);

    const sizes = await compactFile(path);

    expect(readFileSync(path).includes(Buffer.from(SECRET))).toBe(false);
    expect(existsSync(`${path}.wal`)).toBe(false);
    expect(sizes.after).toBeLessThanOrEqual(sizes.before);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    await withFile(path, async (run) => {
      await run(`INSERT INTO kv (k, v) VALUES ('new', 'x')`);
      await run(`INSERT INTO kv (k, v) VALUES ('k1', 'again') ON CONFLICT (k) DO UPDATE SET v = excluded.v`);
      expect(await run(`SELECT count(*)::INTEGER AS n FROM kv_view`)).toEqual([{ n: 5001 }]);
      expect(await run(`SELECT n FROM kv WHERE k = 'new'`)).toEqual([{ n: 5001n }]);
    });
  });
});
