/**
 * A WAL left beside the file (a crash, a checkpoint that failed) is replayed when the file opens, at the limit the
 * open is given. A replay that needs more fails the open at every try, unless the open tries again higher; where
 * the limit is the operator's, the open fails with a line that says which setting to raise, and nothing is lost.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withDatabase } from '../../src/warehouse/connection.js';
import { openWarehouse } from '../../src/warehouse/duckdb-warehouse.js';
import { SalesyncError } from '../../src/core/errors.js';

const ROWS = 10_000;
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'salesync-wal-replay-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A file whose last commits are only in its WAL: a 100-column table's rows, never checkpointed. */
async function fileWithWal(path: string): Promise<void> {
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  await connection.run(`SET checkpoint_threshold = '10GB'`);
  await connection.run('PRAGMA disable_checkpoint_on_shutdown');
  const columns = Array.from({ length: 100 }, (_, i) => `c${i}`);
  await connection.run(`CREATE TABLE t (id INTEGER, ${columns.map((c) => `${c} VARCHAR`).join(', ')})`);
  await connection.run(
    `INSERT INTO t SELECT i, ${columns.map((_, k) => `'v' || (i * ${k + 1})::VARCHAR`).join(', ')} FROM range(${ROWS}) r(i)`,
  );
  connection.closeSync();
  instance.closeSync();
  expect(existsSync(`${path}.wal`), 'the WAL the test needs').toBe(true);
}

const countRows = async (path: string, memoryLimit: string) =>
  withDatabase({ path, access: 'write', lockTimeoutMs: 1000, memoryLimit }, async (c) =>
    Number((await c.runAndReadAll('SELECT count(*) AS n FROM t')).getRowObjects()[0]!.n),
  );

describe("an open whose WAL replay runs out of the open's memory limit", () => {
  it('is tried once more at the replay limit, which replays every commit and says so in a warning', async () => {
    const path = join(dir, 'w.duckdb');
    await fileWithWal(path);
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const rows = await withDatabase(
      { path, access: 'write', lockTimeoutMs: 1000, memoryLimit: '4MB', replayMemoryLimit: '256MB', logger },
      async (c) => Number((await c.runAndReadAll('SELECT count(*) AS n FROM t')).getRowObjects()[0]!.n),
    );
    expect(rows).toBe(ROWS);
    expect(lines.map((l) => (JSON.parse(l) as { msg: string; memoryLimit: string }).memoryLimit)).toEqual(['4MB']);
    expect(lines[0]).toContain('replaying the commits in the WAL');
  });

  it('fails as warehouse_out_of_memory without a replay limit, naming the replay and the setting, and keeps the WAL', async () => {
    const path = join(dir, 'w.duckdb');
    await fileWithWal(path);
    const failure = await countRows(path, '4MB').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SalesyncError);
    expect((failure as SalesyncError).code).toBe('warehouse_out_of_memory');
    expect((failure as SalesyncError).message).toMatch(/replaying WAL file/);
    expect((failure as SalesyncError).message).toContain('SALESYNC_DUCKDB_MEMORY');
    expect((failure as SalesyncError).message).not.toContain('\n');
    // Nothing committed is lost: a larger limit replays it all.
    expect(existsSync(`${path}.wal`)).toBe(true);
    expect(await countRows(path, '256MB')).toBe(ROWS);
  });

  it("keeps a limit of the operator's: the warehouse's call fails with that code, and opens at a higher one", async () => {
    const path = join(dir, 'w.duckdb');
    await fileWithWal(path);
    const logger = pino({ level: 'silent' });
    const kept = openWarehouse({ path, memoryLimit: '4MB', logger });
    const failure = await kept.ensureSchema().catch((error: unknown) => error);
    expect((failure as SalesyncError).code).toBe('warehouse_out_of_memory');
    await kept.close();
    const raised = openWarehouse({ path, memoryLimit: '256MB', logger });
    await raised.ensureSchema();
    await raised.close();
    expect(await countRows(path, '256MB')).toBe(ROWS);
  });
});
