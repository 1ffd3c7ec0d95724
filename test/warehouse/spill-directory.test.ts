import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { basename, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWriterDatabase, withDatabase } from '../../src/warehouse/connection.js';
import { removeOrphanSpills, spillDirectory, spillOwner } from '../../src/warehouse/spill-directory.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'salesync-spill-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** About 90 MB of rows: past a 32 MB limit, most of it lives in spill files while the table does. */
const ROWS = `SELECT i, repeat('x', 200) || i AS s FROM range(400000) t(i)`;

describe('spill files', () => {
  it("a writer's spilled data survives another DuckDB instance of the same file closing (DuckDB deletes every spill file in its temp directory)", async () => {
    const path = join(dir, 'warehouse.duckdb');
    const writer = await openWriterDatabase(path, { memory_limit: '32MB' });
    try {
      await writer.connection.run(`CREATE TEMP TABLE held AS ${ROWS}`);
      // An analyst's DuckDB session on the same file spills beside it, where DuckDB puts a file's spills by default.
      const neighbour = await DuckDBInstance.create(':memory:', { temp_directory: `${path}.tmp`, memory_limit: '32MB' });
      const session = await neighbour.connect();
      await session.run(`CREATE TEMP TABLE spilled AS ${ROWS}`);
      session.closeSync();
      neighbour.closeSync();
      const read = await writer.connection.runAndReadAll(`SELECT count(*)::INTEGER AS n, sum(length(s))::BIGINT AS bytes FROM held`);
      expect(read.getRowObjects()).toEqual([{ n: 400_000, bytes: 82_288_890n }]);
    } finally {
      writer.connection.closeSync();
      writer.instance.closeSync();
    }
  });

  it('every instance spills to a directory of its own beside the file, a reader of the file as a writer does', async () => {
    const path = join(dir, 'warehouse.duckdb');
    const setting = (options: { access: 'read' | 'write' }) =>
      withDatabase({ path, lockTimeoutMs: 1000, ...options }, async (connection) =>
        String((await connection.runAndReadAll(`SELECT current_setting('temp_directory') AS d`)).getRowObjects()[0]!.d),
      );
    const written = await setting({ access: 'write' });
    const read = await setting({ access: 'read' });
    for (const directory of [written, read]) expect(spillOwner(path, directory.slice(dir.length + 1))).toBe(process.pid);
    expect(read).not.toBe(written);
    expect(spillDirectory(path)).not.toBe(spillDirectory(path));
  });

  it("removes the spill directories of processes that are gone, and no other process's or file's", async () => {
    const path = join(dir, 'warehouse.duckdb');
    const names = [
      'warehouse.duckdb.tmp-111-a1b2c3',
      'warehouse.duckdb.tmp-222-d4e5f6',
      'other.duckdb.tmp-111-a1b2c3',
      'warehouse.duckdb.tmp',
    ];
    for (const name of names) await mkdir(join(dir, name, 'inner'), { recursive: true });
    const removed = await removeOrphanSpills(path, (pid) => pid === 222);
    expect(removed).toEqual([join(dir, 'warehouse.duckdb.tmp-111-a1b2c3')]);
    expect((await readdir(dir)).sort()).toEqual(names.slice(1).sort());
    expect(spillOwner(path, 'warehouse.duckdb.tmp-12-zzzzzz')).toBeNull();
  });

  it('a write open removes the spill directory a crashed process left beside the file', async () => {
    const path = join(dir, 'warehouse.duckdb');
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    const orphan = `${path}.tmp-${gone}-abcdef`;
    const live = `${path}.tmp-${process.pid}-abcdef`;
    for (const directory of [orphan, live]) await mkdir(join(directory, 'inner'), { recursive: true });
    await withDatabase({ path, access: 'write', lockTimeoutMs: 1000 }, async () => undefined);
    expect((await readdir(dir)).filter((name) => name.includes('.tmp-'))).toEqual([basename(live)]);
  });
});
