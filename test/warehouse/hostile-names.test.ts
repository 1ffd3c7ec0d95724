import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, ServiceRecord, WalkCheckpoint } from '../../src/core/types.js';
import { openWarehouse, type PageBatch, type Warehouse } from '../../src/warehouse/index.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;

function def(api_name: string, property_type = 'text', display_name = api_name, options: PropertyDefinition['options'] = []): PropertyDefinition {
  return { api_name, display_name, property_type, is_core: false, is_required_on_create: false, options };
}

function deal(n: number, updated_at: string, properties: ServiceRecord['properties'] = {}): ServiceRecord {
  return { id: ID(n), properties, created_at: '2026-01-01T00:00:00Z', updated_at };
}

const checkpoint: WalkCheckpoint = { cursor: 'c', updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' };
const batch = (records: ServiceRecord[]): PageBatch => ({ records, checkpoint });

let dir: string;
let warehouse: Warehouse;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-hostile-'));
  warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('service names that match names of our own', () => {
  it('replaces only its own stored row when a property is named rowid (any case), which would hide DuckDB\'s rowid', async () => {
    const plan = await warehouse.applyPropertyDefinitions('deals', [def('name'), def('RowID')]);
    expect(plan.map((p) => p.columnName)).toEqual(['name', 'RowID__2']);
    await warehouse.commitBatch(
      'deals',
      batch([deal(1, '2026-01-01T00:00:00Z', { name: 'a1', RowID: 'same' }), deal(2, '2026-01-01T00:00:00Z', { name: 'b1', RowID: 'same' })]),
    );
    // Deal 1 changes: deal 2, which holds the same RowID value, stays.
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', { name: 'a2', RowID: 'same' })]));
    expect(await warehouse.query(`SELECT id, name FROM deals ORDER BY id, name`)).toEqual([
      { id: ID(1), name: 'a2' },
      { id: ID(2), name: 'b1' },
    ]);
    // A row whose RowID is NULL is replaced too, not duplicated.
    await warehouse.commitBatch('deals', batch([deal(2, '2026-01-02T00:00:00Z', { name: 'b2' })]));
    await warehouse.commitBatch('deals', batch([deal(2, '2026-01-03T00:00:00Z', { name: 'b3' })]));
    expect(await warehouse.query(`SELECT id, name, "RowID__2" AS r FROM deals ORDER BY id, name`)).toEqual([
      { id: ID(1), name: 'a2', r: 'same' },
      { id: ID(2), name: 'b3', r: null },
    ]);
  });
});

describe('a warehouse made before rowid was reserved', () => {
  it('replaces only its own stored row when a property column is already named rowid', async () => {
    await warehouse.applyPropertyDefinitions('deals', [def('name')]);
    await warehouse.close();
    // As an earlier version assigned it: the property's column is `rowid` itself.
    const instance = await DuckDBInstance.create(join(dir, 'mirror.duckdb'));
    const connection = await instance.connect();
    await connection.run(`ALTER TABLE deals ADD COLUMN rowid VARCHAR`);
    await connection.run(
      `INSERT INTO property_definitions SELECT * REPLACE ('rowid' AS api_name, 'rowid' AS column_name) FROM property_definitions WHERE api_name = 'name'`,
    );
    connection.closeSync();
    instance.closeSync();
    warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
    await warehouse.commitBatch(
      'deals',
      batch([
        deal(1, '2026-01-01T00:00:00Z', { name: 'a1', rowid: '0' }),
        deal(2, '2026-01-01T00:00:00Z', { name: 'b1', rowid: '0' }),
        deal(3, '2026-01-01T00:00:00Z', { name: 'c1' }),
      ]),
    );
    // Deal 2 holds the same `rowid` value as deal 1, deal 3 none: each replacement touches only its own row.
    await warehouse.commitBatch('deals', batch([deal(1, '2026-01-02T00:00:00Z', { name: 'a2', rowid: '0' })]));
    await warehouse.commitBatch('deals', batch([deal(3, '2026-01-02T00:00:00Z', { name: 'c2' })]));
    expect(await warehouse.query(`SELECT id, name, rowid AS r FROM deals ORDER BY id, name`)).toEqual([
      { id: ID(1), name: 'a2', r: '0' },
      { id: ID(2), name: 'b1', r: '0' },
      { id: ID(3), name: 'c2', r: null },
    ]);
    await warehouse.close();
  });
});
