import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';
import { expectHistoryInvariant } from '../support/history-invariant.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SIZE = { deals: 10, companies: 10, contacts: 2000, meetingLogs: 5, contactActivities: 10, users: 4 };

interface Feed {
  changes: { change_seq: string; id: string; kind: string; source: string; changes: Record<string, { old: unknown; new: unknown }> }[];
  cursor: string;
}

/** `salesync changes`: its change lines, and the cursor its last line gives. Logs at debug go to stderr, not the feed. */
async function changes(h: Harness, args: string[]): Promise<Feed> {
  const run = await runCli(['changes', ...args], cliEnv(h, { LOG_LEVEL: 'debug' }));
  expect(run.code, run.stderr).toBe(0);
  const lines = run.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const last = lines.pop()!;
  expect(Object.keys(last)).toEqual(['cursor']);
  return { changes: lines as unknown as Feed['changes'], cursor: String(last.cursor) };
}

describe('salesync changes', () => {
  it('two calls around a sync killed with SIGKILL return every change exactly once', async () => {
    harness = await startHarness({ seed: 51, size: SIZE, faults: { latencyMs: 60 } });
    const sim = harness.sim;
    expect((await harness.sync({ resources: ['contacts'] })).ok).toBe(true);
    const first = await changes(harness, ['contacts', '--since', '0']);
    expect(first.changes).toHaveLength(SIZE.contacts);
    expect(new Set(first.changes.map((c) => c.kind))).toEqual(new Set(['insert']));

    const contacts = sim.admin.truth().records.contacts;
    for (const c of contacts) sim.admin.updateRecord('contacts', c.id, { first_name: `${String(c.properties.first_name)}*` });
    // Killed once a periodic publish (which the readers see) has followed a commit, with the walk under way.
    const killed = await runCli(
      ['sync', 'contacts'],
      cliEnv(harness, { SALESYNC_FLUSH_ROWS: '200', SALESYNC_PUBLISH_EVERY: '1ms', LOG_LEVEL: 'debug' }),
      (kill, stdout) => {
        const timer = setInterval(() => {
          if (/"reason":"periodic"/.test(stdout()) && (stdout().match(/batch committed/g) ?? []).length >= 2) {
            clearInterval(timer);
            kill();
          }
        }, 5);
      },
    );
    expect(killed.signal).toBe('SIGKILL');
    const during = await changes(harness, ['contacts', '--since', first.cursor]);
    expect(during.changes.length).toBeGreaterThan(0);
    expect(during.changes.length).toBeLessThan(SIZE.contacts);

    sim.admin.clearFaults();
    expect((await runCli(['sync', 'contacts'], cliEnv(harness))).code).toBe(0);
    const after = await changes(harness, ['contacts', '--since', during.cursor]);
    const again = await changes(harness, ['contacts', '--since', after.cursor]);
    expect(again).toEqual({ changes: [], cursor: after.cursor });

    // Every update once: no gap, no repeat, and exactly the versions history holds after the first cursor.
    const seen = [...during.changes, ...after.changes];
    expect(seen.map((c) => c.kind)).toEqual(seen.map(() => 'update'));
    expect(new Set(seen.map((c) => c.id)).size).toBe(SIZE.contacts);
    expect(seen.every((c) => Object.keys(c.changes).join() === 'first_name')).toBe(true);
    const warehouse = harness.env().warehouse;
    const versions = await warehouse.query(
      `SELECT CAST(change_seq AS VARCHAR) AS seq FROM contacts_history WHERE change_seq > ${first.cursor} ORDER BY change_seq`,
    );
    expect(seen.map((c) => c.change_seq)).toEqual(versions.map((v) => v.seq));
    await expectHistoryInvariant(warehouse, ['contacts']);

    // The same feed as Parquet, readable by anyone's DuckDB; a bad --since is one line and exit 2.
    const dir = await mkdtemp(join(tmpdir(), 'salesync-changes-'));
    try {
      const file = join(dir, 'changes.parquet');
      const parquet = await runCli(['changes', '--since', first.cursor, '--format', 'parquet', '--output', file], cliEnv(harness));
      expect(parquet.code).toBe(0);
      expect(JSON.parse(parquet.stdout.trim().split('\n').at(-1)!)).toMatchObject({ cursor: after.cursor, rows: SIZE.contacts });
      const instance = await DuckDBInstance.create(':memory:');
      const connection = await instance.connect();
      const read = await connection.runAndReadAll(
        `SELECT count(DISTINCT id)::INTEGER AS n FROM read_parquet('${file}') WHERE kind = 'update'`,
      );
      expect(read.getRowObjectsJson()).toEqual([{ n: SIZE.contacts }]);
      connection.closeSync();
      instance.closeSync();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const bad = await runCli(['changes', '--since', 'yesterday'], cliEnv(harness));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^salesync: invalid_since: /);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    // A time without its zone, and a cursor past every change (another warehouse's, or this one's before a restore).
    const zoneless = await runCli(['changes', '--since', '2026-01-05T00:00:00'], cliEnv(harness));
    expect(zoneless.code).toBe(2);
    expect(zoneless.stderr).toMatch(/^salesync: invalid_since: --since takes .* with a zone/);
    const beyond = await runCli(['changes', '--since', String(BigInt(after.cursor) + 1000n)], cliEnv(harness));
    expect(beyond.code).toBe(2);
    expect(beyond.stderr).toMatch(/^salesync: invalid_since: --since \d+ is past the newest change in this warehouse \(\d+\)/);
  });

  it('a warehouse no sync has given a feed yet: stdout is the cursor alone, the warning goes to stderr', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'salesync-nofeed-'));
    try {
      const path = join(dir, 'old.duckdb');
      const instance = await DuckDBInstance.create(path);
      const connection = await instance.connect();
      await connection.run('CREATE TABLE contacts (id VARCHAR)');
      connection.closeSync();
      instance.closeSync();
      const run = await runCli(['changes', '--since', '0'], { WAREHOUSE_PATH: path, LOG_LEVEL: 'info' });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe('{"cursor":"0"}\n');
      expect(run.stderr).toMatch(/no change feed yet/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
