/**
 * Issue 19: `salesync query` never writes. It opens the published file READ_ONLY with external access off and
 * locked, refuses any statement that is not a read with one `query_refused` line, and changes nothing on disk,
 * whatever lies there (a WAL left by a killed sync included).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createWarehouse } from '../../src/sync/index.js';
import { writerPathFor } from '../../src/warehouse/index.js';
import { cliEnv, runCli } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';

const SMALL = { deals: 150, companies: 50, contacts: 150, meetingLogs: 20, contactActivities: 60, users: 6 };

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** Every file under `dir` with its content hash: what "nothing on disk changed" is checked against. */
function diskState(dir: string): Record<string, string> {
  const state: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else state[path] = `${statSync(path).mode.toString(8)}:${createHash('sha256').update(readFileSync(path)).digest('hex')}`;
    }
  };
  walk(dir);
  return state;
}

const WRITES = [
  'DELETE FROM deals',
  "UPDATE deals SET _properties = '{}'",
  'INSERT INTO deals SELECT * FROM deals',
  'CREATE TABLE sneaky AS SELECT 1 AS x',
  'CREATE TEMP TABLE sneaky (x INTEGER)',
  'DROP TABLE deals',
  'ALTER TABLE deals ADD COLUMN sneaky INTEGER',
  "ATTACH '/tmp/salesync-sneaky.duckdb' AS sneaky",
  'INSTALL httpfs',
  'LOAD json',
  'SET enable_external_access = true',
  'CHECKPOINT',
  'SELECT 1; DELETE FROM deals',
  'WITH gone AS (DELETE FROM deals RETURNING id) SELECT count(*) FROM gone',
  'EXPLAIN ANALYZE DELETE FROM deals',
];

async function expectRefused(h: Harness, sql: string): Promise<string> {
  const run = await runCli(['query', sql], cliEnv(h));
  expect(run.code, `${sql}: ${run.stderr}`).not.toBe(0);
  const lines = run.stderr.trim().split('\n');
  expect(lines, sql).toHaveLength(1);
  expect(lines[0], sql).toMatch(/^salesync: query_refused: .+ is not allowed: query is read-only/);
  return lines[0]!;
}

/** The same refusal where the CLI gets it (`warehouse.query`), without a process per statement. */
async function expectRefusedInProcess(h: Harness, sql: string): Promise<void> {
  const reader = createWarehouse(h.config, pino({ level: 'silent' }));
  try {
    await expect(reader.query(sql), sql).rejects.toMatchObject({
      code: 'query_refused',
      message: expect.stringMatching(/.+ is not allowed: query is read-only/),
    });
  } finally {
    await reader.close();
  }
}

/** Through the built CLI: one line on stderr and a failing exit, for one statement of each kind of write. */
const THROUGH_THE_CLI = new Set(['DELETE FROM deals', "ATTACH '/tmp/salesync-sneaky.duckdb' AS sneaky", 'SELECT 1; DELETE FROM deals']);

describe('salesync query never writes', () => {
  it('refuses every writing statement with one query_refused line, and nothing on disk changes', async () => {
    harness = await startHarness({ seed: 1911, size: SMALL });
    const h = harness;
    expect((await runCli(['sync'], cliEnv(h))).code).toBe(0);
    const before = diskState(h.dir);
    // Four at a time: each is a reader of its own, and what they must not change is checked after all of them.
    const limit = pLimit(4);
    await Promise.all(
      WRITES.map((sql) =>
        limit(async () => void (THROUGH_THE_CLI.has(sql) ? await expectRefused(h, sql) : await expectRefusedInProcess(h, sql))),
      ),
    );
    expect(diskState(h.dir)).toEqual(before);
    const ok = await runCli(['query', 'SELECT count(*)::INTEGER AS n FROM deals', '--json'], cliEnv(h));
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual([{ n: SMALL.deals }]);
  });

  it('reads no file but the warehouse: read_text and COPY … TO are refused', async () => {
    harness = await startHarness({ seed: 1912, size: SMALL });
    const h = harness;
    expect((await runCli(['sync', 'users'], cliEnv(h))).code).toBe(0);
    const before = diskState(h.dir);
    expect(await expectRefused(h, "SELECT * FROM read_text('/etc/passwd')")).toContain('/etc/passwd');
    const out = join(h.dir, 'out.csv');
    await expectRefused(h, `COPY users TO '${out}'`);
    await expectRefused(h, `EXPORT DATABASE '${join(h.dir, 'exported')}'`);
    expect(existsSync(out)).toBe(false);
    expect(diskState(h.dir)).toEqual(before);
  });

  it('prints at most 10,000 rows of a huge result and says so, without reading the rest', async () => {
    harness = await startHarness({ seed: 1915, size: SMALL });
    const h = harness;
    expect((await runCli(['sync', 'users'], cliEnv(h))).code).toBe(0);
    // A billion rows: read whole, this would not fit in memory.
    const sql = 'SELECT range AS n FROM range(1000000000)';
    const table = await runCli(['query', sql], cliEnv(h));
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.trim().split('\n').at(-1)).toMatch(/^\(the first 10,000 rows of more, which were not read: add a LIMIT/);
    const json = await runCli(['query', sql, '--json'], cliEnv(h));
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toHaveLength(10_000);
    expect(json.stderr).toMatch(/query printed the first 10,000 rows of more/);
  });

  it('after a kill -9 of a sync that left a WAL beside the writer file, query reads the published copy, refuses writes and changes nothing; the next sync recovers', async () => {
    harness = await startHarness({ seed: 1913, size: { ...SMALL, deals: 3000 } });
    const h = harness;
    expect((await runCli(['sync', 'users'], cliEnv(h))).code).toBe(0);
    const writer = writerPathFor(h.config.warehousePath);
    h.sim.admin.setFaults({ latencyMs: 40 });
    // Killed as soon as its writer has commits in a WAL (the flush of a few pages, long before the walk ends).
    const killed = await runCli(['sync', 'deals'], cliEnv(h, { SALESYNC_FLUSH_ROWS: '100', SALESYNC_LINGER: '60s' }), (kill) => {
      const timer = setInterval(() => {
        if (existsSync(`${writer}.wal`) && statSync(`${writer}.wal`).size > 0) {
          clearInterval(timer);
          kill();
        }
      }, 5);
    });
    expect(killed.signal).toBe('SIGKILL');
    expect(existsSync(`${writer}.wal`)).toBe(true);
    expect(existsSync(`${h.config.warehousePath}.wal`)).toBe(false);

    const before = diskState(h.dir);
    await expectRefused(h, 'DELETE FROM users');
    await expectRefused(h, 'DELETE FROM deals');
    const read = await runCli(['query', 'SELECT count(*)::INTEGER AS n FROM users', '--json'], cliEnv(h));
    expect(read.code, read.stderr).toBe(0);
    expect(JSON.parse(read.stdout)).toEqual([{ n: SMALL.users }]);
    expect(diskState(h.dir)).toEqual(before);

    h.sim.admin.setFaults({ latencyMs: 0 });
    const rerun = await runCli(['sync'], cliEnv(h));
    expect(rerun.code, rerun.stderr).toBe(0);
    const count = await runCli(['query', 'SELECT count(*)::INTEGER AS n FROM deals', '--json'], cliEnv(h));
    expect(JSON.parse(count.stdout)).toEqual([{ n: 3000 }]);
  }, 120_000);

  it('a WAL beside the published file (an older release killed mid-write) is neither replayed nor removed by query', async () => {
    harness = await startHarness({ seed: 1914, size: SMALL });
    const h = harness;
    expect((await runCli(['sync', 'users'], cliEnv(h))).code).toBe(0);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(`${h.config.warehousePath}.wal`, 'not ours to replay');
    const before = diskState(h.dir);
    await expectRefused(h, 'DELETE FROM users');
    await runCli(['query', 'SELECT count(*) FROM users'], cliEnv(h));
    expect(diskState(h.dir)).toEqual(before);
  });
});
