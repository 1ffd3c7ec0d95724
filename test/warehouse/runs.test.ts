import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, describe, expect, it } from 'vitest';
import { findProblems } from '../../src/cli/health-check.js';
import { collectStatus } from '../../src/status/index.js';
import { abandonedRuns, type RunningRow } from '../../src/warehouse/runs.js';
import { openWarehouse, type RunOwner } from '../../src/warehouse/index.js';

const alive = new Set([100, 200]);
const owner = (processId: string, pid: number, host = 'box'): RunOwner => ({ host, pid, processId, isAlive: (p) => alive.has(p) });
const self = owner('me', 100);
const ids = (rows: RunningRow[]) => rows.map((r) => r.runId);
const row = (runId: string, processId: string | null, pid: number | null, host: string | null = 'box'): RunningRow => ({
  runId,
  host,
  pid,
  processId,
});

describe('abandonedRuns', () => {
  it('abandons a run of a process on this host that is gone', () => {
    expect(ids(abandonedRuns([row('r', 'other', 999)], self, new Set()))).toEqual(['r']);
  });

  it('keeps a run of a live process, and runs of other hosts or without an owner (they cannot be judged here)', () => {
    expect(
      ids(abandonedRuns([row('live', 'other', 200), row('far', 'other', 999, 'elsewhere'), row('old', null, null, null)], self, new Set())),
    ).toEqual([]);
  });

  it('abandons a run recorded under our pid by an earlier process (the pid was reused)', () => {
    expect(ids(abandonedRuns([row('r', 'earlier', 100)], self, new Set()))).toEqual(['r']);
  });

  it("keeps this process's runs (another Warehouse of it may be running them) unless their end could not be recorded", () => {
    expect(ids(abandonedRuns([row('going', 'me', 100), row('unrecorded', 'me', 100)], self, new Set(['unrecorded'])))).toEqual([
      'unrecorded',
    ]);
  });
});

describe('sync_runs ownership', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the next run started on a host marks the runs of its ended processes abandoned, and only those', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-runs-'));
    const path = join(dir, 'w.duckdb');
    const started = { mode: 'full' as const, startedAt: new Date('2026-01-01T00:00:00Z') };
    const dead = await openWarehouse({ path, runOwner: owner('dead', 999) }).startRun({ resource: 'deals', ...started });
    const live = await openWarehouse({ path, runOwner: owner('live', 200) }).startRun({ resource: 'contacts', ...started });
    const far = await openWarehouse({ path, runOwner: owner('far', 999, 'elsewhere') }).startRun({ resource: 'companies', ...started });
    const warehouse = openWarehouse({ path, runOwner: self });
    const mine = await warehouse.startRun({ resource: 'deals', ...started });
    const outcomes = Object.fromEntries((await warehouse.recentRuns(10)).map((r) => [r.runId, [r.outcome, r.errorCode ?? null]]));
    expect(outcomes).toEqual({
      [dead]: ['abandoned', 'run_abandoned'],
      [live]: ['running', null],
      [far]: ['running', null],
      [mine]: ['running', null],
    });
    const [{ error_message: message }] = (await warehouse.query(`SELECT error_message FROM sync_runs WHERE run_id = '${dead}'`)) as [
      { error_message: string },
    ];
    expect(message).toMatch(/PID 999 on box/);
  });
});

describe('sync_runs figures', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('records a run that succeeded with rejects: records quarantined, passes walked, and whether the last pass settled', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-runs-'));
    const warehouse = openWarehouse({ path: join(dir, 'w.duckdb'), runOwner: self });
    const runId = await warehouse.startRun({ resource: 'deals', mode: 'incremental', startedAt: new Date('2026-01-01T00:00:00Z') });
    await warehouse.finishRun(runId, {
      finishedAt: new Date('2026-01-01T00:01:00Z'),
      pages: 2,
      records: 10,
      requests: 3,
      retries: 0,
      rateLimited: 0,
      outcome: 'succeeded_with_rejects',
      rejected: 3,
      passes: 2,
      settled: true,
    });
    const [run] = await warehouse.recentRuns(1);
    expect(run).toMatchObject({ runId, outcome: 'succeeded_with_rejects', rejected: 3, passes: 2, settled: true });
    expect(await warehouse.query(`SELECT rejected, passes, settled FROM sync_runs`)).toEqual([{ rejected: 3, passes: 2, settled: true }]);
  });
});

describe('the latest run of each mode', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a failed nightly reconcile stays the latest of its mode, and a problem for status --check, through a day of later syncs', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-runs-'));
    const path = join(dir, 'w.duckdb');
    let warehouse = openWarehouse({ path, runOwner: self });
    const night = Date.parse('2026-12-06T03:00:00Z');
    const run = async (resource: 'deals' | 'contacts', mode: 'reconcile' | 'incremental', at: number, outcome: 'failed' | 'succeeded') => {
      const id = await warehouse.startRun({ resource, mode, startedAt: new Date(at) });
      await warehouse.finishRun(id, {
        finishedAt: new Date(at + 1000),
        pages: 1,
        records: 1,
        requests: 1,
        retries: 0,
        rateLimited: 0,
        outcome,
        ...(outcome === 'failed' ? { errorCode: 'timeout', errorMessage: 'the service is slow' } : {}),
      });
    };
    await run('deals', 'reconcile', night, 'failed');
    await run('deals', 'incremental', night + 60_000, 'succeeded');
    await run('contacts', 'incremental', night + 60_000, 'succeeded');
    await warehouse.close();
    // A day of 15-minute syncs of every resource: more runs than any fixed window of recent ones held.
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    await connection.run(
      `INSERT INTO sync_runs SELECT r.* REPLACE (r.run_id || '-' || n AS run_id, r.started_at + INTERVAL (n) MINUTE AS started_at)
       FROM sync_runs AS r, range(1, 351) AS t(n) WHERE r.mode = 'incremental'`,
    );
    connection.closeSync();
    instance.closeSync();
    warehouse = openWarehouse({ path, runOwner: self });
    const latest = await warehouse.latestRuns();
    expect(latest.map((r) => `${r.resource} ${r.mode} ${r.outcome}`).sort()).toEqual([
      'contacts incremental succeeded',
      'deals incremental succeeded',
      'deals reconcile failed',
    ]);
    const statuses = await collectStatus(warehouse, night + 351 * 60_000);
    const deals = statuses.find((s) => s.resource === 'deals')!;
    expect(deals.lastRuns.reconcile?.outcome).toBe('failed');
    expect(deals.lastRun?.mode).toBe('incremental');
    expect(findProblems(statuses, { default: null, perResource: {} }).map((p) => `${p.resource} ${p.kind}`)).toContain('deals failed');
    await warehouse.close();
  });
});
