import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBConnection } from '@duckdb/node-api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PropertyDefinition, ServiceRecord } from '../../src/core/types.js';
import { IdFilter, noteWrittenIds } from '../../src/warehouse/id-filter.js';
import { openWarehouse, type Warehouse } from '../../src/warehouse/index.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;
const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ID(from + i));

describe('the ids a session wrote to a table it saw empty', () => {
  it('answer "maybe" for every id held, in every segment, given as a list or newline-joined', () => {
    const filter = new IdFilter();
    // Past the first segments' capacities (65,536, then 131,072): ids land in three segments.
    for (let from = 0; from < 300_000; from += 2_000) expect(filter.add(ids(from, from + 2_000).join('\n'))).toBe(true);
    for (let n = 0; n < 300_000; n += 1) if (!filter.mayHoldAny([ID(n)])) throw new Error(`${ID(n)} was added, yet the filter holds none`);
    expect(filter.mayHoldAny(`${ID(900_000_001)}\n${ID(299_999)}`)).toBe(true);
  });

  it('answer "none" for ids never held but for about one in a million', () => {
    const filter = new IdFilter();
    filter.add(ids(0, 300_000));
    let wrong = 0;
    for (let n = 1_000_000; n < 1_300_000; n += 1) if (filter.mayHoldAny([ID(n)])) wrong += 1;
    // Expected about 0.3 here: more than 3 means the filter no longer spares a batch its lookup.
    expect(wrong).toBeLessThanOrEqual(3);
    expect(filter.mayHoldAny(ids(2_000_000, 2_020_000).join('\n'))).toBe(false);
    expect(filter.mayHoldAny('')).toBe(false);
  });

  it('once their memory is spent, answer "maybe" for every id and take no more', () => {
    // Room for the first segment (256 KiB) only.
    const filter = new IdFilter(300 * 1024);
    expect(filter.add(ids(0, 65_536))).toBe(true);
    expect(filter.isFull).toBe(false);
    expect(filter.add([ID(65_536)])).toBe(false);
    expect(filter.isFull).toBe(true);
    expect(filter.mayHoldAny([ID(5_000_000)])).toBe(true);
  });

  it('start with a batch that found the table empty, grow with each batch written after, and end when ids are unknown or too many', () => {
    const filters = new Map<string, IdFilter>();
    noteWrittenIds(filters, 'deals', ids(0, 10).join('\n'), false);
    expect(filters.has('deals')).toBe(false);
    noteWrittenIds(filters, 'deals', ids(0, 10).join('\n'), true);
    noteWrittenIds(filters, 'deals', ids(10, 20).join('\n'), false);
    expect(filters.get('deals')!.mayHoldAny([ID(15)])).toBe(true);
    expect(filters.get('deals')!.mayHoldAny([ID(25)])).toBe(false);
    noteWrittenIds(filters, 'deals', undefined, false);
    expect(filters.has('deals')).toBe(false);
    filters.set('contacts', new IdFilter(300 * 1024));
    noteWrittenIds(filters, 'contacts', ids(0, 70_000).join('\n'), false);
    expect(filters.has('contacts')).toBe(false);
  });
});

describe('a first load into an empty table', () => {
  let dir: string | undefined;
  afterEach(() => {
    vi.restoreAllMocks();
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });
  const defs: PropertyDefinition[] = [
    { api_name: 'name', display_name: 'Name', property_type: 'text', is_core: false, is_required_on_create: false, options: [] },
  ];
  const deal = (n: number, updated_at: string, name = `deal ${n}`): ServiceRecord => ({
    id: ID(n),
    properties: { name },
    created_at: '2026-01-01T00:00:00Z',
    updated_at,
  });
  const checkpoint = { cursor: null, updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' as const };
  const T1 = '2026-01-02T00:00:00Z';
  const T2 = '2026-01-03T00:00:00Z';
  // Lingering: the batches are one session's, as a walk's commits are when they come faster than the linger.
  const open = (): Warehouse => openWarehouse({ path: join(dir!, 'w.duckdb'), lockTimeoutMs: 1500, lingerMs: 60_000 });
  /** Statements that look the batch's ids up in the deals table itself. */
  const probes = () => {
    const spy = vi.spyOn(DuckDBConnection.prototype, 'runAndReadAll');
    return () => spy.mock.calls.filter(([sql]) => /FROM "deals" WHERE id IN/.test(sql)).length;
  };
  const commit = (warehouse: Warehouse, records: ServiceRecord[]) => warehouse.commitBatch('deals', { records, checkpoint });

  it('looks its ids up only for the first batch and for one holding an id it wrote, which replaces that row', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-fresh-'));
    const warehouse = open();
    try {
      await warehouse.applyPropertyDefinitions('deals', defs);
      const looked = probes();
      for (let page = 0; page < 4; page += 1) {
        const batch = Array.from({ length: 50 }, (_, i) => deal(page * 50 + i, T1));
        expect(await commit(warehouse, batch)).toMatchObject({ written: 50 });
      }
      expect(looked()).toBe(1);
      // A record of the first batch again, changed since (a moving list), beside new ones.
      expect(await commit(warehouse, [deal(500, T1), deal(7, T2, 'seven, newer'), deal(501, T1)])).toMatchObject({
        written: 3,
        changed: 3,
      });
      expect(looked()).toBe(2);
      expect(await warehouse.query('SELECT count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS ids FROM deals')).toEqual([
        { n: 202, ids: 202 },
      ]);
      expect(await warehouse.query(`SELECT name FROM deals WHERE id = '${ID(7)}'`)).toEqual([{ name: 'seven, newer' }]);
      expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM deals_history WHERE id = '${ID(7)}'`)).toEqual([{ n: 2 }]);
    } finally {
      await warehouse.close();
    }
  });

  it('written by an earlier session is not one: each batch looks its ids up, and a stored one is replaced, not doubled', async () => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-fresh-'));
    const earlier = open();
    try {
      await earlier.applyPropertyDefinitions('deals', defs);
      await commit(earlier, [deal(1, T1), deal(2, T1)]);
    } finally {
      await earlier.close();
    }
    const warehouse = open();
    try {
      const looked = probes();
      // New ids only: the table holds rows all the same, written by another session.
      expect(await commit(warehouse, [deal(3, T1), deal(4, T1)])).toMatchObject({ written: 2 });
      expect(await commit(warehouse, [deal(1, T2, 'one, newer'), deal(5, T1)])).toMatchObject({ written: 2, changed: 2 });
      expect(looked()).toBe(2);
      expect(await warehouse.query('SELECT id, name FROM deals ORDER BY id')).toEqual([
        { id: ID(1), name: 'one, newer' },
        { id: ID(2), name: 'deal 2' },
        { id: ID(3), name: 'deal 3' },
        { id: ID(4), name: 'deal 4' },
        { id: ID(5), name: 'deal 5' },
      ]);
    } finally {
      await warehouse.close();
    }
  });
});
