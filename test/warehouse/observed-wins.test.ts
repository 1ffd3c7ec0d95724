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

describe('observed wins', () => {
  it('with observedSince a newer row written since keeps its place, while one written before it is still overwritten', async () => {
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', 'stored before the walk')]));
    const walkBegan = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    // A sync beside the walk writes deal 2 after the walk began.
    await warehouse.commitBatch('deals', batch([deal(2, '2026-01-02T00:00:00Z', 'written since')]));
    const result = await warehouse.commitBatch(
      'deals',
      observed([deal(1, '2026-01-01T00:00:00Z', 'older, observed'), deal(2, '2026-01-01T00:00:00Z', 'older, read before')], {
        observedSince: walkBegan,
      }),
    );
    expect(result).toMatchObject({ written: 1 });
    expect(await names()).toEqual([
      [ID(1), 'older, observed'],
      [ID(2), 'written since'],
    ]);
  });

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

  it('history follows the mirror in commit order: an observed older version is one version, dated when it was observed', async () => {
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', 'v2')]));
    await warehouse.commitBatch('deals', observed([deal(1, '2026-01-01T00:00:00Z', 'v1')]));
    // Seen again: the live row does not change, so no version.
    await warehouse.commitBatch('deals', observed([deal(1, '2026-01-01T00:00:00Z', 'v1')]));
    // The row goes forward again: a version, after v1 in commit order.
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', 'v2')]));
    expect(await names()).toEqual([[ID(1), 'v2']]);
    const versions = await warehouse.query(
      `SELECT properties->>'name' AS name, valid_from_basis AS basis, is_current FROM deals_history ORDER BY change_seq`,
    );
    expect(versions.map((v) => [v.name, v.basis, v.is_current])).toEqual([
      ['v2', 'updated_at', false],
      // updated_at moved backwards: dated by the observation, after the version it follows.
      ['v1', 'observed', false],
      ['v2', 'observed', true],
    ]);
    const ordered = await warehouse.query(
      `SELECT count(*)::INTEGER AS n FROM (SELECT valid_from, lead(valid_from) OVER (ORDER BY change_seq) AS next FROM deals_history)
       WHERE next IS NOT NULL AND next <= valid_from`,
    );
    expect(ordered).toEqual([{ n: 0 }]);
  });
});
