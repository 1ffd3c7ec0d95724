import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, ServiceRecord, WalkCheckpoint } from '../../src/core/types.js';
import { openWarehouse, type PageBatch, type SweepBatch, type Warehouse } from '../../src/warehouse/index.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;
const DEFS: PropertyDefinition[] = [
  { api_name: 'name', display_name: 'name', property_type: 'text', is_core: true, is_required_on_create: true, options: [] },
  { api_name: 'account_id', display_name: 'account_id', property_type: 'text', is_core: true, is_required_on_create: false, options: [] },
];
const SWEEP_START = '2026-01-05T00:00:00Z';
const KEY = 'deals#reconcile';

function deal(n: number, updated_at: string, properties: ServiceRecord['properties'] = { name: `deal ${n}` }): ServiceRecord {
  return { id: ID(n), properties, created_at: '2025-12-01T00:00:00Z', updated_at };
}

const checkpoint = (cursor: string | null): WalkCheckpoint => ({ cursor, updatedAfter: null, startedAt: SWEEP_START, mode: 'full' });
const sweep = (fresh = false): SweepBatch => ({ key: KEY, fresh });
/** A sweep batch under the sweep's own state key; `cursor: null` ends its pass. */
const sweepBatch = (records: ServiceRecord[], cursor: string | null, fresh = false, extra: Partial<PageBatch> = {}): PageBatch => ({
  records,
  checkpoint: checkpoint(cursor),
  stateKey: KEY,
  sweep: sweep(fresh),
  ...extra,
});
const walkBatch = (records: ServiceRecord[]): PageBatch => ({ records, checkpoint: { ...checkpoint('c'), mode: 'incremental' } });
const complete = (deletedIds: string[], deletedAt = '2026-01-05T01:00:00Z') =>
  warehouse.completeSweep('deals', { key: KEY, stateKey: KEY, deletedIds, deletedAt, completedAt: SWEEP_START });

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

const deletedIds = async () => (await warehouse.query(`SELECT id FROM deals WHERE _deleted_at IS NOT NULL ORDER BY id`)).map((r) => r.id);

describe('reconcile sweep in the warehouse', () => {
  it('writes only changed rows and counts them; its completing batch marks nothing deleted and records every listed id as seen', async () => {
    await warehouse.commitBatch(
      'deals',
      walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z'), deal(3, '2026-01-01T00:00:00Z')]),
    );
    const syncedBefore = await warehouse.query(`SELECT id, CAST(_synced_at AS VARCHAR) AS s FROM deals ORDER BY id`);

    // Deal 1 unchanged, deal 2 relinked without moving updated_at, deal 3 not listed.
    const first = await warehouse.commitBatch('deals', sweepBatch([deal(1, '2026-01-01T00:00:00Z')], 'c1', true));
    expect(first).toMatchObject({ written: 0, changed: 0, deleted: 0 });
    const last = await warehouse.commitBatch(
      'deals',
      sweepBatch([deal(2, '2026-01-01T00:00:00Z', { name: 'deal 2', account_id: 'X' })], null),
    );
    expect(last).toMatchObject({ written: 1, changed: 1, deleted: 0 });
    expect(await deletedIds()).toEqual([]);
    const syncedAfter = await warehouse.query(`SELECT id, CAST(_synced_at AS VARCHAR) AS s FROM deals ORDER BY id`);
    expect(syncedAfter[0]).toEqual(syncedBefore[0]); // the unchanged row was not rewritten
    expect(await warehouse.query(`SELECT id FROM reconcile_seen WHERE sweep_key = '${KEY}' ORDER BY id`)).toEqual([
      { id: ID(1) },
      { id: ID(2) },
    ]);
  });

  it('a sweep over a table that stores none of its ids writes them all and records each as seen', async () => {
    const result = await warehouse.commitBatch(
      'deals',
      sweepBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')], 'c1', true),
    );
    expect(result).toMatchObject({ written: 2, changed: 2, deleted: 0 });
    expect(await warehouse.query(`SELECT id, name FROM deals ORDER BY id`)).toEqual([
      { id: ID(1), name: 'deal 1' },
      { id: ID(2), name: 'deal 2' },
    ]);
    expect(await warehouse.query(`SELECT id FROM reconcile_seen WHERE sweep_key = '${KEY}' ORDER BY id`)).toEqual([
      { id: ID(1) },
      { id: ID(2) },
    ]);
  });

  it('sweepCandidates lists the live rows the sweep never listed, whatever their updated_at, and counts the live rows', async () => {
    await warehouse.commitBatch(
      'deals',
      walkBatch([
        deal(1, '2026-01-01T00:00:00Z'),
        deal(2, '2026-01-01T00:00:00Z'),
        deal(3, '2026-01-01T00:00:00Z'),
        deal(4, '2026-01-06T00:00:00Z'), // stamped after the sweep started (a clock ahead): still a candidate
        deal(5, '2026-01-01T00:00:00Z'),
      ]),
    );
    await warehouse.completeSweep('deals', {
      key: 'earlier',
      stateKey: 'earlier',
      deletedIds: [ID(5)],
      deletedAt: '2026-01-02T00:00:00Z',
      completedAt: '2026-01-02T00:00:00Z',
    });
    await warehouse.commitBatch('deals', sweepBatch([deal(1, '2026-01-01T00:00:00Z')], null, true));
    expect(await warehouse.sweepCandidates('deals', KEY)).toEqual({ ids: [ID(2), ID(3), ID(4)], live: 4 });
    // A table never written has none.
    expect(await warehouse.sweepCandidates('companies', 'companies#reconcile')).toEqual({ ids: [], live: 0 });
  });

  it("sweepCandidates does not refuse a sweep that listed nothing: every live row is a candidate (the share check is the sync's)", async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')]));
    await expect(warehouse.commitBatch('deals', sweepBatch([], null, true))).resolves.toMatchObject({ deleted: 0 });
    expect(await warehouse.sweepCandidates('deals', KEY)).toEqual({ ids: [ID(1), ID(2)], live: 2 });
    expect(await deletedIds()).toEqual([]);
  });

  it("completeSweep marks exactly the given ids, keeps the time of rows already marked, forgets the seen ids and completes the sweep's state row", async () => {
    await warehouse.commitBatch(
      'deals',
      walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z'), deal(3, '2026-01-01T00:00:00Z')]),
    );
    await warehouse.completeSweep('deals', {
      key: 'earlier',
      stateKey: 'earlier',
      deletedIds: [ID(3)],
      deletedAt: '2026-01-02T00:00:00Z',
      completedAt: '2026-01-02T00:00:00Z',
    });
    await warehouse.commitBatch('deals', sweepBatch([deal(1, '2026-01-01T00:00:00Z')], 'c1', true));
    expect((await warehouse.readState('deals', KEY)).walk?.cursor).toBe('c1');

    // Deal 2 is a candidate but (say) was found by its GET: only deal 3, already marked, is given.
    expect(await complete([ID(3)])).toBe(0);
    expect(await complete([ID(2)], '2026-01-05T02:00:00Z')).toBe(1);
    expect(await warehouse.query(`SELECT id, _deleted_at FROM deals WHERE _deleted_at IS NOT NULL ORDER BY id`)).toEqual([
      { id: ID(2), _deleted_at: '2026-01-05T02:00:00.000000Z' },
      { id: ID(3), _deleted_at: '2026-01-02T00:00:00.000000Z' },
    ]);
    expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM reconcile_seen WHERE sweep_key = '${KEY}'`)).toEqual([{ n: 0 }]);
    // The sweep's row keeps its start as its watermark: what the last complete sweep vouches for.
    expect(await warehouse.readState('deals', KEY)).toMatchObject({ walk: null, lastCompletedAt: SWEEP_START, watermark: SWEEP_START });
    // The resource's own walk is untouched.
    expect((await warehouse.readState('deals')).walk?.cursor).toBe('c');
  });

  it('an id that comes back clears its _deleted_at in any walk, and counts as changed', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')]));
    await complete([ID(2)]);
    expect(await deletedIds()).toEqual([ID(2)]);

    const back = await warehouse.commitBatch('deals', walkBatch([deal(2, '2026-01-01T00:00:00Z')]));
    expect(back).toMatchObject({ written: 1, changed: 1 });
    expect(await deletedIds()).toEqual([]);

    // Through a sweep too, even with unchanged content.
    await complete([ID(2)]);
    const again = await warehouse.commitBatch(
      'deals',
      sweepBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')], null, true),
    );
    expect(again).toMatchObject({ written: 1, changed: 1, deleted: 0 });
    expect(await deletedIds()).toEqual([]);
  });

  it('a sweep without observedWins does not write a stale listing, nor count it as changed', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z')]));
    const done = await warehouse.commitBatch('deals', sweepBatch([deal(1, '2025-12-31T00:00:00Z', { name: 'old' })], null, true));
    expect(done).toMatchObject({ written: 0, changed: 0 });
    expect(await warehouse.query(`SELECT name FROM deals`)).toEqual([{ name: 'deal 1' }]);
  });

  it('a fresh sweep forgets the ids an abandoned sweep saw', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')]));
    await warehouse.commitBatch('deals', sweepBatch([deal(2, '2026-01-01T00:00:00Z')], 'c1', true));
    await warehouse.commitBatch('deals', sweepBatch([deal(1, '2026-01-01T00:00:00Z')], null, true));
    expect((await warehouse.sweepCandidates('deals', KEY)).ids).toEqual([ID(2)]);
  });

  it('a record the sweep listed but quarantined counts as seen: never a deletion candidate', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')]));
    await warehouse.commitBatch(
      'deals',
      sweepBatch([deal(1, '2026-01-01T00:00:00Z')], null, true, {
        rejects: [{ id: ID(2), raw: '{"id":"D00000000000000002","properties":{"name":{}}}', reason: 'properties.name: must be a string' }],
        runId: 'run-1',
      }),
    );
    expect(await warehouse.sweepCandidates('deals', KEY)).toEqual({ ids: [], live: 2 });
  });

  it('rows stored before content hashes get one on the next sweep without counting as drift', async () => {
    await warehouse.commitBatch('deals', walkBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z')]));
    // An older warehouse: the column did not exist.
    const instance = await DuckDBInstance.create(warehouse.path);
    const connection = await instance.connect();
    await connection.run(`ALTER TABLE deals DROP COLUMN _content_hash`);
    connection.closeSync();
    instance.closeSync();

    const result = await warehouse.commitBatch(
      'deals',
      sweepBatch([deal(1, '2026-01-01T00:00:00Z'), deal(2, '2026-01-01T00:00:00Z', { name: 'renamed' })], null, true),
    );
    expect(result).toMatchObject({ written: 2, changed: 1, deleted: 0 });
    expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals WHERE _content_hash IS NULL`)).toEqual([{ n: 0 }]);
  });
});
