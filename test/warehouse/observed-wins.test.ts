import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, ServiceRecord, WalkCheckpoint } from '../../src/core/types.js';
import { openWarehouse, type PageBatch, type Warehouse } from '../../src/warehouse/index.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;
const DEFS: PropertyDefinition[] = [
  { api_name: 'name', display_name: 'name', property_type: 'text', is_core: true, is_required_on_create: true, options: [] },
];
const checkpoint: WalkCheckpoint = { cursor: 'c', updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' };

function deal(n: number, updated_at: string, name: string): ServiceRecord {
  return { id: ID(n), properties: { name }, created_at: '2025-12-01T00:00:00Z', updated_at };
}
const batch = (records: ServiceRecord[], extra: Partial<PageBatch> = {}): PageBatch => ({ records, checkpoint, ...extra });
const observed = (records: ServiceRecord[], extra: Partial<PageBatch> = {}) => batch(records, { observedWins: true, ...extra });

let dir: string;
let warehouse: Warehouse;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-observed-'));
  warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
  await warehouse.applyPropertyDefinitions('deals', DEFS);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const names = async () => (await warehouse.query(`SELECT id, name FROM deals ORDER BY id`)).map((r) => [r.id, r.name]);
const history = async () =>
  (await warehouse.query(`SELECT id, properties->>'name' AS name FROM deals_history ORDER BY id, updated_at`)).map((r) => [r.id, r.name]);

describe('observed wins', () => {
  it('without observedWins the newer updated_at stays: an older version is skipped, and the latest of a batch wins', async () => {
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', 'stored')]));
    const result = await warehouse.commitBatch(
      'deals',
      batch([
        deal(1, '2026-01-01T00:00:00Z', 'older'),
        deal(2, '2026-01-02T00:00:00Z', 'latest'),
        deal(2, '2026-01-01T00:00:00Z', 'last but older'),
      ]),
    );
    expect(result).toMatchObject({ written: 1 });
    expect(await names()).toEqual([
      [ID(1), 'stored'],
      [ID(2), 'latest'],
    ]);
  });

  it('with observedWins a batch writes a version older than the stored row, and the last occurrence of an id in the batch wins', async () => {
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', 'stored')]));
    const result = await warehouse.commitBatch(
      'deals',
      observed([
        deal(1, '2026-01-01T00:00:00Z', 'older, observed'),
        deal(2, '2026-01-02T00:00:00Z', 'first, newer'),
        deal(2, '2026-01-01T00:00:00Z', 'last, older'),
      ]),
    );
    expect(result).toMatchObject({ written: 2, changed: 2 });
    expect(await names()).toEqual([
      [ID(1), 'older, observed'],
      [ID(2), 'last, older'],
    ]);
    expect((await warehouse.storedUpdatedAt('deals', [ID(1)])).get(ID(1))).toBe('2026-01-01T00:00:00.000000Z');
  });

  it('a sweep with observedWins writes a changed older version, and still skips an unchanged row', async () => {
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', 'stored'), deal(2, '2026-01-02T00:00:00Z', 'same')]));
    const result = await warehouse.commitBatch(
      'deals',
      observed([deal(1, '2026-01-01T00:00:00Z', 'older, observed'), deal(2, '2026-01-02T00:00:00Z', 'same')], {
        stateKey: 'deals#reconcile',
        sweep: { key: 'deals#reconcile', fresh: true },
      }),
    );
    expect(result).toMatchObject({ written: 1, changed: 1 });
    expect(await names()).toEqual([
      [ID(1), 'older, observed'],
      [ID(2), 'same'],
    ]);
  });

  it('history records an observed older version once, and a newer version seen again after the row went back is not recorded twice', async () => {
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', 'v2')]));
    await warehouse.commitBatch('deals', observed([deal(1, '2026-01-01T00:00:00Z', 'v1')]));
    await warehouse.commitBatch('deals', observed([deal(1, '2026-01-01T00:00:00Z', 'v1')]));
    expect(await history()).toEqual([
      [ID(1), 'v1'],
      [ID(1), 'v2'],
    ]);
    // The stored row is v1 now, history holds v2: v2 seen again (newer than the row) is found in history.
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', 'v2')]));
    expect(await names()).toEqual([[ID(1), 'v2']]);
    expect(await history()).toEqual([
      [ID(1), 'v1'],
      [ID(1), 'v2'],
    ]);
    // Past what history held, versions go straight in again, and the id needs no more lookups.
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-03T00:00:00Z', 'v3')]));
    expect(await history()).toEqual([
      [ID(1), 'v1'],
      [ID(1), 'v2'],
      [ID(1), 'v3'],
    ]);
    expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM history_ahead`)).toEqual([{ n: 0 }]);
  });

  it('a row taken back twice remembers the newest version history holds', async () => {
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-03T00:00:00Z', 'v3')]));
    await warehouse.commitBatch('deals', observed([deal(1, '2026-01-02T00:00:00Z', 'v2')]));
    await warehouse.commitBatch('deals', observed([deal(1, '2026-01-01T00:00:00Z', 'v1')]));
    // v2 and v3 are both ahead of the stored v1, and both already in history.
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', 'v2')]));
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-03T00:00:00Z', 'v3')]));
    expect(await history()).toEqual([
      [ID(1), 'v1'],
      [ID(1), 'v2'],
      [ID(1), 'v3'],
    ]);
    expect(await names()).toEqual([[ID(1), 'v3']]);
  });
});
