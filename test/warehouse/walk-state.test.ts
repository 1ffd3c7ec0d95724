import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WalkCheckpoint } from '../../src/core/types.js';
import { openWarehouse, type Warehouse } from '../../src/warehouse/index.js';

const STARTED = '2026-01-05T00:00:00.000001Z';
const plain: WalkCheckpoint = { cursor: 'c1', updatedAfter: '2026-01-04T00:00:00Z', startedAt: STARTED, mode: 'incremental' };
const DEFAULTS = { cursorKey: null, pass: 1, passStartedAt: STARTED, dirty: false, maxUpdatedAt: null, localClock: false, received: 0 };

let dir: string;
let path: string;
let warehouse: Warehouse;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-state-'));
  path = join(dir, 'mirror.duckdb');
  warehouse = openWarehouse({ path, lockTimeoutMs: 1500 });
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('walk state', () => {
  it("stores where a pass stands (pass, its start, dirty, largest updated_at, local clock, records received, the cursor's key) and reads it back as written", async () => {
    const checkpoint: WalkCheckpoint = {
      ...plain,
      cursorKey: 'sk_…0123abcd',
      pass: 3,
      passStartedAt: '2026-01-05T00:10:00.5+09:00',
      dirty: true,
      maxUpdatedAt: '2026-01-05T00:09:59.999999Z',
      localClock: true,
      received: 3_000_000_000,
    };
    await warehouse.commitBatch('deals', { records: [], checkpoint, stateKey: 'deals#backfill' });
    expect(await warehouse.readState('deals', 'deals#backfill')).toEqual({
      resource: 'deals',
      watermark: null,
      walk: checkpoint,
      lastCompletedAt: null,
      confirmFrom: null,
    });
  });

  it('reads a checkpoint written without pass fields back with their defaults', async () => {
    await warehouse.commitBatch('deals', { records: [], checkpoint: plain });
    expect((await warehouse.readState('deals')).walk).toEqual({ ...plain, ...DEFAULTS });
  });

  it('a checkpoint without pass fields reads back the defaults, whatever an earlier walk of the row stored', async () => {
    const dirty: WalkCheckpoint = { ...plain, pass: 2, dirty: true, maxUpdatedAt: '2026-01-05T00:00:00Z', localClock: true, received: 400 };
    await warehouse.commitBatch('deals', { records: [], checkpoint: dirty });
    await warehouse.clearWalk('deals');
    expect((await warehouse.readState('deals')).walk).toBeNull();
    await warehouse.commitBatch('deals', { records: [], checkpoint: dirty });
    await warehouse.commitBatch('deals', {
      records: [],
      checkpoint: { ...dirty, cursor: null },
      completeWatermark: '2026-01-05T00:00:00Z',
    });
    await warehouse.commitBatch('deals', { records: [], checkpoint: plain });
    expect((await warehouse.readState('deals')).walk).toEqual({ ...plain, ...DEFAULTS });
  });

  it("keeps the service's cursor text exactly, whatever it holds (quotes, NUL, SQL, newlines), beside the records it follows", async () => {
    const cursor = "o'k\u0000'); DROP TABLE deals; --\n😀";
    const record = { id: 'D00000000000000001', created_at: STARTED, updated_at: STARTED, properties: {} };
    await warehouse.commitBatch('deals', { records: [record], checkpoint: { ...plain, cursor, updatedAfter: "'\u0000" } });
    expect((await warehouse.readState('deals')).walk).toEqual({ ...plain, cursor, updatedAfter: "'\u0000", ...DEFAULTS });
    expect(await warehouse.tableCounts()).toMatchObject({ deals: 1 });
  });

  it('a completed walk stores where the next walk starts instead of its watermark, and the next completion replaces it', async () => {
    const done = { ...plain, cursor: null };
    await warehouse.commitBatch('deals', {
      records: [],
      checkpoint: done,
      completeWatermark: '2026-01-05T00:00:00Z',
      confirmFrom: STARTED,
    });
    expect(await warehouse.readState('deals')).toMatchObject({ watermark: '2026-01-05T00:00:00Z', confirmFrom: STARTED, walk: null });
    // A checkpoint of a walk under way leaves it; the walk's completion without one clears it.
    await warehouse.commitBatch('deals', { records: [], checkpoint: plain });
    expect(await warehouse.readState('deals')).toMatchObject({ confirmFrom: STARTED });
    await warehouse.commitBatch('deals', { records: [], checkpoint: done, completeWatermark: '2026-01-06T00:00:00Z' });
    expect(await warehouse.readState('deals')).toMatchObject({ watermark: '2026-01-06T00:00:00Z', confirmFrom: null });
  });

  it('a completed walk may store a null watermark', async () => {
    await warehouse.commitBatch('deals', { records: [], checkpoint: plain });
    await warehouse.commitBatch('deals', { records: [], checkpoint: { ...plain, cursor: null }, completeWatermark: null });
    expect(await warehouse.readState('deals')).toMatchObject({ watermark: null, walk: null, lastCompletedAt: expect.any(String) });
  });
});

describe('a warehouse written by the previous release', () => {
  /** The previous release's sync_state and sync_runs (and a meeting log), as it left them. */
  async function writePreviousRelease(): Promise<void> {
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    await connection.run(`
      CREATE TABLE sync_state (resource VARCHAR PRIMARY KEY, watermark VARCHAR, walk_cursor VARCHAR, walk_updated_after VARCHAR,
        walk_started_at VARCHAR, walk_mode VARCHAR, last_completed_at VARCHAR, updated_at TIMESTAMPTZ);
      CREATE TABLE sync_runs (run_id VARCHAR PRIMARY KEY, resource VARCHAR NOT NULL, mode VARCHAR NOT NULL, started_at TIMESTAMPTZ NOT NULL,
        finished_at TIMESTAMPTZ, pages BIGINT, records BIGINT, requests BIGINT, retries BIGINT, rate_limited BIGINT, outcome VARCHAR NOT NULL,
        error_code VARCHAR, error_message VARCHAR, changed BIGINT, deleted BIGINT, host VARCHAR, pid INTEGER, process_id VARCHAR);
      CREATE TABLE meeting_log_summaries (meeting_log_id VARCHAR NOT NULL, summary_type VARCHAR, result_type VARCHAR, text VARCHAR,
        selections STRUCT(value VARCHAR, level INTEGER, "order" INTEGER)[], reason VARCHAR, status VARCHAR, updated_at TIMESTAMPTZ, position INTEGER NOT NULL);
      CREATE TABLE reconcile_seen (sweep_key VARCHAR NOT NULL, id VARCHAR NOT NULL);
      CREATE TABLE meeting_logs (id VARCHAR NOT NULL, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, _properties JSON,
        _synced_at TIMESTAMPTZ, _deleted_at TIMESTAMPTZ, _content_hash VARCHAR);
      INSERT INTO sync_state VALUES ('deals', '2026-01-01T00:00:00Z', 'c7', NULL, '${STARTED}', 'full', '2026-01-01T00:00:00Z', now());
      INSERT INTO sync_runs VALUES ('r1', 'deals', 'full', TIMESTAMPTZ '2026-01-01 00:00:00Z', TIMESTAMPTZ '2026-01-01 00:01:00Z',
        1, 2, 3, 0, 0, 'succeeded', NULL, NULL, 0, 0, 'box', 1, '1@1');
      INSERT INTO meeting_logs VALUES ('M1', TIMESTAMPTZ '2026-01-02 00:00:00Z', TIMESTAMPTZ '2026-01-02 00:00:00Z', '{}', now(), NULL, NULL),
        ('M2', TIMESTAMPTZ '2026-01-03 00:00:00Z', TIMESTAMPTZ '2026-01-03 00:00:00Z', '{}', now(), NULL, NULL);
      INSERT INTO meeting_log_summaries VALUES ('M1', 'overview', 'text', 't', [], '', 'completed', NULL, 0);
    `);
    connection.closeSync();
    instance.closeSync();
  }

  it('reads its state, runs, quarantine and summaries read-only, then gains the new columns on the first write', async () => {
    await writePreviousRelease();
    expect(existsSync(`${path}.wal`)).toBe(false); // so reads open it READ_ONLY, as they would in the field

    const walk = { cursor: 'c7', updatedAfter: null, startedAt: STARTED, mode: 'full', ...DEFAULTS };
    expect(await warehouse.readState('deals')).toEqual({
      resource: 'deals',
      watermark: '2026-01-01T00:00:00Z',
      walk,
      lastCompletedAt: '2026-01-01T00:00:00Z',
      confirmFrom: null,
    });
    const [run] = await warehouse.recentRuns(5);
    expect(run).toMatchObject({ runId: 'r1', outcome: 'succeeded', pages: 1, changed: 0 });
    expect(run).not.toHaveProperty('settled');
    expect(run).not.toHaveProperty('passes');
    expect(await warehouse.rejectedCounts()).toEqual({});
    const due = { createdAfter: '2026-01-01T00:00:00Z', serverNow: '2026-01-10T00:00:00Z', recheckMs: 3_600_000 };
    expect([...(await warehouse.logsAwaitingSummaries({ ...due, finalStatuses: null })).keys()]).toEqual(['M2', 'M1']);
    expect([...(await warehouse.logsAwaitingSummaries({ ...due, finalStatuses: ['completed'] })).keys()]).toEqual(['M2']);

    // The first write opens it read-write: the fixed schema adds what this release needs, the old rows intact.
    const runId = await warehouse.startRun({ resource: 'deals', mode: 'full', startedAt: new Date('2026-01-06T00:00:00Z') });
    await warehouse.finishRun(runId, {
      finishedAt: new Date('2026-01-06T00:01:00Z'),
      pages: 1,
      records: 1,
      requests: 1,
      retries: 0,
      rateLimited: 0,
      outcome: 'succeeded_with_rejects',
      rejected: 2,
      passes: 2,
      settled: false,
    });
    expect(await warehouse.readState('deals')).toEqual({
      resource: 'deals',
      watermark: '2026-01-01T00:00:00Z',
      walk,
      lastCompletedAt: '2026-01-01T00:00:00Z',
      confirmFrom: null,
    });
    await warehouse.commitBatch('deals', { records: [], checkpoint: { ...plain, pass: 2 } });
    expect((await warehouse.readState('deals')).walk).toEqual({ ...plain, ...DEFAULTS, pass: 2 });
    expect((await warehouse.recentRuns(5)).map((r) => [r.runId, r.outcome, r.rejected, r.passes, r.settled])).toEqual([
      [runId, 'succeeded_with_rejects', 2, 2, false],
      ['r1', 'succeeded', undefined, undefined, undefined],
    ]);
  });
});
