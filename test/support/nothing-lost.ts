import { expect } from 'vitest';
import { RESOURCES, type RecordResourceName } from '../../src/core/resources.js';
import { parseInstantMicros } from '../../src/core/time.js';
import type { Simulator, Truth } from '../../src/simulator/index.js';
import type { Warehouse } from '../../src/warehouse/types.js';

/** The simulator's truth now, deep-copied: later changes in the service do not move it. */
export function frozenTruth(sim: Simulator): Truth {
  return structuredClone(sim.admin.truth());
}

/** A stand-in for the simulator whose truth is `truth`: to hold a warehouse to an earlier truth with expectMirrorsTruth. */
export function truthAsOf(truth: Truth): Simulator {
  return { admin: { truth: () => truth } } as unknown as Simulator;
}

/** JSON with keys sorted: the same properties compare equal whatever order they were sent in. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

const RECORD_RESOURCES = RESOURCES.filter((r) => r.shape === 'record') as Array<{ name: RecordResourceName; table: string }>;

/**
 * After a failed run over a service that changed since `before`: nothing committed earlier is lost (every record
 * of `before` is still a live row) and nothing is wrong (every row is exactly a version the service had, in `before`
 * or in `after`: its `updated_at` to the microsecond and its raw properties). A failed run may have committed some of
 * the newer versions; that is progress, not damage.
 */
export async function expectNothingLost(warehouse: Warehouse, before: Truth, after: Truth): Promise<{ rows: number; newer: number }> {
  let rows = 0;
  let newer = 0;
  for (const { name, table } of RECORD_RESOURCES) {
    const versions = new Map<string, Set<string>>();
    for (const truth of [before, after]) {
      for (const record of truth.records[name]) {
        const key = `${parseInstantMicros(record.updated_at)} ${canonical(record.properties)}`;
        const set = versions.get(record.id) ?? new Set<string>();
        set.add(key);
        versions.set(record.id, set);
      }
    }
    const stored = await warehouse.query(
      `SELECT id, CAST(epoch_us(updated_at) AS VARCHAR) AS u, CAST(_properties AS VARCHAR) AS p FROM "${table}" WHERE _deleted_at IS NULL`,
    );
    const storedIds = new Set(stored.map((r) => String(r.id)));
    const missing = before.records[name].filter((r) => !storedIds.has(r.id)).map((r) => r.id);
    expect(missing, `${name}: records committed before the failed run and now missing`).toEqual([]);
    const beforeIds = new Map(before.records[name].map((r) => [r.id, `${parseInstantMicros(r.updated_at)} ${canonical(r.properties)}`]));
    for (const row of stored) {
      const key = `${String(row.u)} ${canonical(JSON.parse(String(row.p)))}`;
      expect(versions.get(String(row.id))?.has(key), `${name} ${String(row.id)}: a version the service never had`).toBe(true);
      if (beforeIds.get(String(row.id)) !== key) newer += 1;
    }
    rows += stored.length;
  }
  return { rows, newer };
}
