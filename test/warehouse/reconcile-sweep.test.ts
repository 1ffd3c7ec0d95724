import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MeetingLogSummary, PropertyDefinition, ServiceRecord, WalkCheckpoint } from '../../src/core/types.js';
import { openWarehouse, type PageBatch, type SweepBatch, type Warehouse } from '../../src/warehouse/index.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;
const DEFS: PropertyDefinition[] = [
  { api_name: 'name', display_name: 'name', property_type: 'text', is_core: true, is_required_on_create: true, options: [] },
  { api_name: 'account_id', display_name: 'account_id', property_type: 'text', is_core: true, is_required_on_create: false, options: [] },
];
const SWEEP_START = '2026-01-05T00:00:00Z';

function deal(n: number, updated_at: string, properties: ServiceRecord['properties'] = { name: `deal ${n}` }): ServiceRecord {
  return { id: ID(n), properties, created_at: '2025-12-01T00:00:00Z', updated_at };
}

const checkpoint = (cursor: string | null): WalkCheckpoint => ({ cursor, updatedAfter: null, startedAt: SWEEP_START, mode: 'full' });
const sweep = (fresh = false): SweepBatch => ({ key: 'deals#reconcile', startedAt: SWEEP_START, fresh });
/** A sweep batch under the sweep's own state key; `cursor: null` completes the sweep. */
const sweepBatch = (records: ServiceRecord[], cursor: string | null, fresh = false): PageBatch => ({
  records, checkpoint: checkpoint(cursor), stateKey: 'deals#reconcile', sweep: sweep(fresh),
  ...(cursor === null ? { completeWatermark: SWEEP_START } : {}),
});
const walkBatch = (records: ServiceRecord[]): PageBatch => ({ records, checkpoint: { ...checkpoint('c'), mode: 'incremental' } });

let dir: string;
let warehouse: Warehouse;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-sweep-'));
  warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
  await warehouse.applyPropertyDefinitions('deals', DEFS);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const deletedIds = async () =>
  (await warehouse.query(`SELECT id FROM deals WHERE _deleted_at IS NOT NULL ORDER BY id`)).map((r) => r.id);

describe('reconcile sweep in the warehouse', () => {
  it('refuses to mark every row deleted when a complete sweep listed nothing, and changes nothing', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')]));
    await expect(warehouse.commitBatch('deals', sweepBatch([], null, true))).rejects.toMatchObject({ code: 'reconcile_empty_sweep' });
    expect(await deletedIds()).toEqual([]);
  });

  it('writes only changed rows, counts them, and marks ids unseen by the complete sweep', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z'), deal(3, '2026-01-01T00:00:00Z')]));
    const syncedBefore = await warehouse.query(`SELECT id, CAST(_synced_at AS VARCHAR) AS s FROM deals ORDER BY id`);

    // Deal 1 unchanged, deal 2 relinked without moving updated_at, deal 3 gone.
    const first = await warehouse.commitBatch('deals', sweepBatch([deal(1, '2026-01-01T00:00:00Z')], 'c1', true));
    expect(first).toMatchObject({ written: 0, changed: 0, deleted: 0 });
    const last = await warehouse.commitBatch('deals', sweepBatch([deal(2, '2026-01-01T00:00:00Z', { name: 'deal 2', account_id: 'X' })], null));
    expect(last).toMatchObject({ written: 1, changed: 1, deleted: 1 });
    expect(await deletedIds()).toEqual([ID(3)]);
    const syncedAfter = await warehouse.query(`SELECT id, CAST(_synced_at AS VARCHAR) AS s FROM deals ORDER BY id`);
    expect(syncedAfter[0]).toEqual(syncedBefore[0]); // the unchanged row was not rewritten
    expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM reconcile_seen`)).toEqual([{ n: 0 }]);
    // The sweep's state is its own row; the resource's watermark is untouched.
    expect((await warehouse.readState('deals')).watermark).toBeNull();
    expect((await warehouse.readState('deals', 'deals#reconcile')).watermark).toBe(SWEEP_START);
  });

  it('an id that comes back clears its _deleted_at in any walk, and counts as changed', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')]));
    await warehouse.commitBatch('deals', sweepBatch([deal(1, '2026-01-01T00:00:00Z')], null, true));
    expect(await deletedIds()).toEqual([ID(2)]);

    const back = await warehouse.commitBatch('deals', walkBatch([deal(2, '2026-01-01T00:00:00Z')]));
    expect(back).toMatchObject({ written: 1, changed: 1 });
    expect(await deletedIds()).toEqual([]);

    // Through a sweep too, even with unchanged content.
    await warehouse.commitBatch('deals', sweepBatch([deal(1, '2026-01-01T00:00:00Z')], null, true));
    const again = await warehouse.commitBatch('deals', sweepBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')], null, true));
    expect(again).toMatchObject({ written: 1, changed: 1, deleted: 0 });
    expect(await deletedIds()).toEqual([]);
  });

  it('never marks a row updated after the sweep started (it may sit behind the cursor), nor a stale listing as changed', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-06T00:00:00Z')]));
    // The sweep listed an older version of deal 1 (a concurrent walk stored a newer one) and never saw deal 2.
    const done = await warehouse.commitBatch('deals', sweepBatch([deal(1, '2025-12-31T00:00:00Z', { name: 'old' })], null, true));
    expect(done).toMatchObject({ written: 0, changed: 0, deleted: 0 });
    expect(await deletedIds()).toEqual([]);
  });

  it('a fresh sweep forgets the ids an abandoned sweep saw', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')]));
    await warehouse.commitBatch('deals', sweepBatch([deal(2, '2026-01-01T00:00:00Z')], 'c1', true));
    await warehouse.commitBatch('deals', sweepBatch([deal(1, '2026-01-01T00:00:00Z')], null, true));
    expect(await deletedIds()).toEqual([ID(2)]);
  });

  it('rows stored before content hashes get one on the next sweep without counting as drift', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')]));
    // An older warehouse: the column did not exist.
    const instance = await DuckDBInstance.create(warehouse.path);
    const connection = await instance.connect();
    await connection.run(`ALTER TABLE deals DROP COLUMN _content_hash`);
    connection.closeSync();
    instance.closeSync();

    const result = await warehouse.commitBatch('deals', sweepBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z', { name: 'renamed' })], null, true));
    expect(result).toMatchObject({ written: 2, changed: 1, deleted: 0 });
    expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals WHERE _content_hash IS NULL`)).toEqual([{ n: 0 }]);
  });

  it('summaries are rewritten only for logs whose summaries changed', async () => {
    const summary = (status: string): MeetingLogSummary => ({
      summary_type: 'overview', result_type: 'text', text: 't', selections: [{ value: 'hot', level: 1, order: 1 }], reason: '', status,
      updated_at: '2026-01-01T00:00:00.123456Z',
    });
    const log = { ...deal(1, '2026-01-01T00:00:00Z'), id: 'M00000000000000001' };
    const other = { ...deal(2, '2026-01-01T00:00:00Z'), id: 'M00000000000000002' };
    const first = await warehouse.commitBatch('meeting-logs', {
      records: [log, other], summaries: new Map([[log.id, [summary('pending')]], [other.id, []]]),
    });
    expect(first.summariesChanged).toBe(1);
    const same = await warehouse.commitBatch('meeting-logs', { records: [], summaries: new Map([[log.id, [summary('pending')]], [other.id, []]]) });
    expect(same.summariesChanged).toBe(0);
    const done = await warehouse.commitBatch('meeting-logs', { records: [], summaries: new Map([[log.id, [summary('completed')]]]) });
    expect(done.summariesChanged).toBe(1);
    expect(await warehouse.query(`SELECT status FROM meeting_log_summaries`)).toEqual([{ status: 'completed' }]);

    // Awaiting summaries: empty or not final, created in the window.
    const awaiting = await warehouse.logsAwaitingSummaries('2025-11-01T00:00:00Z', ['completed', 'failed']);
    expect([...awaiting.keys()]).toEqual([other.id]);
    expect(await warehouse.logsAwaitingSummaries('2025-12-02T00:00:00Z', ['completed', 'failed'])).toEqual(new Map());
    expect([...(await warehouse.logsAwaitingSummaries('2025-11-01T00:00:00Z', ['failed'])).keys()].sort()).toEqual([log.id, other.id]);
  });
});
