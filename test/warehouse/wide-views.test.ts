import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, ServiceRecord } from '../../src/core/types.js';
import { openWarehouse, type Warehouse } from '../../src/warehouse/index.js';

// Wide enough that a join per select property (the former views) could not answer at the default limit.
const SELECTS = 300;
const DEALS = 300;

/** Every property has the same option values with labels of its own: a label from the wrong map shows. */
function selectDefinition(i: number): PropertyDefinition {
  return {
    api_name: `pick_${i}`,
    display_name: `Pick ${i}`,
    property_type: 'select',
    is_core: false,
    is_required_on_create: false,
    options: ['a', 'b', 'c'].map((value) => ({ value, label: `${i}:${value.toUpperCase()}` })),
  };
}

const DEFINITIONS: PropertyDefinition[] = [
  { api_name: 'name', display_name: 'Name', property_type: 'text', is_core: true, is_required_on_create: false, options: [] },
  ...Array.from({ length: SELECTS }, (_, i) => selectDefinition(i)),
];

/** Deal n's value for pick_i: an option, a value without an option, or none (missing key or null). */
function valueOf(n: number, i: number): string | null | undefined {
  switch ((n + i) % 6) {
    case 0:
      return 'a';
    case 1:
      return 'b';
    case 2:
      return 'c';
    case 3:
      return 'gone'; // an option the service no longer lists
    case 4:
      return null;
    default:
      return undefined;
  }
}

/** What the view shows for it: the label, the value itself without an option, NULL for no value. */
function shownOf(n: number, i: number): string | null {
  const value = valueOf(n, i);
  if (value === undefined || value === null) return null;
  return value === 'gone' ? 'gone' : `${i}:${value.toUpperCase()}`;
}

function deal(n: number, day: number): ServiceRecord {
  const properties: ServiceRecord['properties'] = { name: `Deal ${n}` };
  for (let i = 0; i < SELECTS; i += 1) {
    const value = valueOf(n, i);
    if (value !== undefined) properties[`pick_${i}`] = value;
  }
  return {
    id: `D${String(n).padStart(17, '0')}`,
    created_at: '2026-01-01T00:00:00Z',
    updated_at: `2026-01-0${day}T00:00:00Z`,
    properties,
  };
}

let dir: string;
let warehouse: Warehouse;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-wide-views-'));
  warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb') });
});

afterEach(async () => {
  await warehouse.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('views of a wide organization', () => {
  it(`label ${SELECTS} select properties in SELECT * of the live and history views, reading property_options once`, async () => {
    await warehouse.applyPropertyDefinitions('deals', DEFINITIONS);
    const checkpoint = { cursor: 'c', updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' as const };
    await warehouse.commitBatch('deals', {
      records: Array.from({ length: DEALS }, (_, n) => deal(n, 1)),
      checkpoint,
    });

    for (const view of ['deals_view', 'deals_history_view']) {
      const rows = await warehouse.query(`SELECT * FROM ${view} ORDER BY id`);
      expect(rows).toHaveLength(DEALS);
      rows.forEach((row, n) => {
        expect(row.Name).toBe(`Deal ${n}`);
        for (let i = 0; i < SELECTS; i += 1) {
          if (row[`Pick ${i}`] !== shownOf(n, i)) expect.fail(`${view}, deal ${n}, Pick ${i}: ${String(row[`Pick ${i}`])}`);
        }
      });
      // One read of the options for all the columns, whatever the width.
      const [definition] = await warehouse.query(`SELECT sql FROM duckdb_views() WHERE view_name = '${view}'`);
      expect(String(definition?.sql).match(/property_options/g)).toHaveLength(1);
    }
  });
});
