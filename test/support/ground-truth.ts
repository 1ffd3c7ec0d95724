import { isDeepStrictEqual } from 'node:util';
import { expect } from 'vitest';
import { wellFormed } from '../../src/api/json-bytes.js';
import { RESOURCES, type RecordResourceName } from '../../src/core/resources.js';
import { parseInstantMicros } from '../../src/core/time.js';
import type { PropertyDefinition, Simulator } from '../../src/simulator/index.js';
import type { Warehouse } from '../../src/warehouse/types.js';

const q = (name: string) => `"${name.replace(/"/g, '""')}"`;
const lit = (value: string) => `'${value.replace(/'/g, "''")}'`;

/** A typed column read back in a canonical, comparable form. */
function canonicalSql(column: string, type: string): string {
  switch (type) {
    case 'date':
      return `strftime(${q(column)}, '%Y-%m-%d')`;
    case 'datetime':
      return `CAST(epoch_us(${q(column)}) AS VARCHAR)`;
    case 'number':
    case 'boolean':
      return q(column);
    default:
      return `CAST(${q(column)} AS VARCHAR)`;
  }
}

/** What the typed column must hold for a service value. */
function expectedTyped(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'datetime':
      return String(parseInstantMicros(String(value)));
    case 'number':
    case 'boolean':
    case 'date':
    case 'text':
    case 'select':
      return value;
    default:
      return JSON.stringify(value);
  }
}

/**
 * The resource's current property definitions (those its latest listing gave) equal the service's, every field of
 * each: display names, types, flags and options as the analysts' views read them.
 */
async function expectDefinitionsMirrorTruth(
  warehouse: Warehouse,
  resource: RecordResourceName,
  truth: readonly PropertyDefinition[],
): Promise<void> {
  const rows = await warehouse.query(
    `SELECT api_name, display_name, property_type, is_core, is_required_on_create, CAST(options AS VARCHAR) AS options
     FROM property_definitions AS p
     WHERE resource = ${lit(resource)}
       AND last_seen_at = (SELECT max(last_seen_at) FROM property_definitions AS q WHERE q.resource = p.resource)
     ORDER BY api_name`,
  );
  const stored = rows.map((r) => ({ ...r, options: r.options === null ? null : (JSON.parse(String(r.options)) as unknown) }));
  const wanted = [...truth]
    .sort((a, b) => (a.api_name < b.api_name ? -1 : 1))
    .map((d) => ({
      api_name: d.api_name,
      display_name: d.display_name,
      property_type: d.property_type,
      is_core: d.is_core,
      is_required_on_create: d.is_required_on_create,
      options: d.options,
    }));
  expect(stored, `${resource}: property definitions`).toEqual(wanted);
}

/**
 * Asserts the warehouse equals the simulator's ground truth, field by field: the same ids, timestamps to the
 * microsecond, the raw properties, every typed column, the users, and (optionally) meeting-log summaries.
 */
export async function expectMirrorsTruth(
  warehouse: Warehouse,
  sim: Simulator,
  options: {
    resources?: RecordResourceName[];
    summaries?: boolean;
    users?: boolean;
    exclude?: readonly string[];
    /** Compare the current property definitions too (off where a test feeds the sync definitions the truth lacks). */
    definitions?: boolean;
  } = {},
): Promise<void> {
  const truth = sim.admin.truth();
  // What the warehouse can hold of the service's text: a lone surrogate arrives as U+FFFD (parseJsonBytes).
  wellFormed(truth.records);
  wellFormed(truth.summaries);
  wellFormed(truth.users);
  wellFormed(truth.properties);
  // Records left out on purpose (in quarantine): neither side is compared for them.
  const excluded = new Set(options.exclude ?? []);
  const resources = options.resources ?? (RESOURCES.filter((r) => r.shape === 'record').map((r) => r.name) as RecordResourceName[]);
  for (const resource of resources) {
    const table = RESOURCES.find((r) => r.name === resource)!.table;
    const defs = await warehouse.query(
      `SELECT api_name, column_name, property_type FROM property_definitions WHERE resource = ${lit(resource)}`,
    );
    const typed = defs.map((d) => `${canonicalSql(String(d.column_name), String(d.property_type))} AS ${q(`t:${d.api_name}`)}`);
    const rows = await warehouse
      .query(
        `SELECT id, CAST(epoch_us(created_at) AS VARCHAR) AS c, CAST(epoch_us(updated_at) AS VARCHAR) AS u,
              CAST(_properties AS VARCHAR) AS p ${typed.length ? `, ${typed.join(', ')}` : ''}
       FROM ${q(table)} WHERE _deleted_at IS NULL ORDER BY id`,
      )
      .then((all) => all.filter((r) => !excluded.has(String(r.id))));
    const expected = [...truth.records[resource]]
      .filter((r) => !excluded.has(r.id))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    expect(
      rows.map((r) => r.id),
      `${resource}: ids`,
    ).toEqual(expected.map((r) => r.id));
    // One comparison of the whole table first: an expect per cell costs about a second per check of a few
    // thousand records. Only a table that differs is compared cell by cell, for a message naming the cell.
    const cells = (c: unknown, u: unknown, p: unknown, typed: (apiName: string, type: string) => unknown) => [
      c,
      u,
      p,
      ...defs.map((d) => typed(String(d.api_name), String(d.property_type))),
    ];
    const stored = rows.map((row) => cells(row.c, row.u, JSON.parse(String(row.p)), (apiName) => row[`t:${apiName}`]));
    const wanted = expected.map((record) =>
      cells(
        String(parseInstantMicros(record.created_at)),
        String(parseInstantMicros(record.updated_at)),
        record.properties,
        (apiName, type) => expectedTyped(record.properties[apiName], type),
      ),
    );
    if (options.definitions !== false) await expectDefinitionsMirrorTruth(warehouse, resource, truth.properties[resource]);
    if (isDeepStrictEqual(stored, wanted)) continue;
    expected.forEach((record, i) => {
      const row = rows[i]!;
      const where = `${resource} ${record.id}`;
      expect(row.c, `${where} created_at`).toBe(String(parseInstantMicros(record.created_at)));
      expect(row.u, `${where} updated_at`).toBe(String(parseInstantMicros(record.updated_at)));
      expect(JSON.parse(String(row.p)), `${where} _properties`).toEqual(record.properties);
      for (const def of defs) {
        const apiName = String(def.api_name);
        expect(row[`t:${apiName}`], `${where} column ${String(def.column_name)}`).toEqual(
          expectedTyped(record.properties[apiName], String(def.property_type)),
        );
      }
    });
  }

  // Users are compared whenever every resource was (a sync of all resources refreshes them too).
  if (options.users ?? options.resources === undefined) {
    const users = await warehouse.query(`SELECT id, email, name, is_active FROM users WHERE _deleted_at IS NULL ORDER BY id`);
    expect(users, 'users').toEqual(
      [...truth.users]
        .sort((a, b) => (a.id < b.id ? -1 : 1))
        .map((u) => ({ id: u.id, email: u.email, name: u.name, is_active: u.is_active })),
    );
  }

  if (options.summaries !== false && resources.includes('meeting-logs')) {
    const stored = await warehouse.query(
      `SELECT meeting_log_id, summary_type, result_type, text, CAST(to_json(selections) AS VARCHAR) AS selections, reason, status,
              CAST(epoch_us(updated_at) AS VARCHAR) AS u
       FROM meeting_log_summaries
       -- A log marked deleted keeps its last summaries, like its row: compare the live logs'.
       WHERE meeting_log_id IN (SELECT id FROM meeting_logs WHERE _deleted_at IS NULL)
       ORDER BY meeting_log_id, position`,
    );
    const expectedSummaries = Object.entries(truth.summaries)
      .filter(([id]) => truth.records['meeting-logs'].some((r) => r.id === id))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .flatMap(([id, list]) =>
        list.map((s) => ({
          meeting_log_id: id,
          summary_type: s.summary_type,
          result_type: s.result_type,
          text: s.text,
          selections: s.selections.map((x) => ({ value: x.value, level: x.level, order: x.order })),
          reason: s.reason,
          status: s.status,
          u: String(parseInstantMicros(s.updated_at)),
        })),
      );
    // Each log's summaries as a multiset: the spec fixes no order for the array.
    const inOrder = (rows: Record<string, unknown>[]): Record<string, unknown>[] =>
      rows
        .map((row) => ({ row, key: `${String(row.meeting_log_id)}\u0000${JSON.stringify(row)}` }))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        .map(({ row }) => row);
    expect(
      inOrder(stored.map((s) => ({ ...s, selections: JSON.parse(String(s.selections)) as unknown }))),
      'meeting_log_summaries',
    ).toEqual(inOrder(expectedSummaries));
  }
}
