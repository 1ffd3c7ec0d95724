/**
 * What changed in a resource's property definitions, recorded as data: type changes in
 * `property_type_changes`, and the current select options in `property_options` (the views' labels).
 * Runs inside the transaction that applies the definitions.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { RecordResourceName } from '../core/resources.js';
import type { PropertyDefinition } from '../core/types.js';
import { quoteIdentifier, type ColumnAssignment } from './identifiers.js';
import { stageRows } from './staging.js';
import type { ColumnPlan } from './types.js';

const OPTION_STAGE = '_salesync_options';

export interface TypeChange {
  apiName: string;
  oldType: string;
  newType: string;
  oldColumn: string;
  newColumn: string;
}

/**
 * Type changes between the assignments stored before and the plan applied now. Pure. A change whose SQL type
 * is the same (text → select) keeps its column, so old and new column are equal there.
 */
export function typeChanges(before: readonly ColumnAssignment[], plan: readonly ColumnPlan[]): TypeChange[] {
  const previous = new Map(before.map((a) => [a.apiName, a]));
  const changes: TypeChange[] = [];
  for (const entry of plan) {
    const old = previous.get(entry.apiName);
    if (!old || old.propertyType === entry.propertyType) continue;
    changes.push({
      apiName: entry.apiName,
      oldType: old.propertyType,
      newType: entry.propertyType,
      oldColumn: old.columnName,
      newColumn: entry.columnName,
    });
  }
  return changes;
}

/** A property as stored before a listing: whether the resource's last listing named it. */
export interface ListedBefore {
  apiName: string;
  inLastListing: boolean;
}

/** Each stored property of `resource`, and whether the last listing named it. */
export async function readListedBefore(connection: DuckDBConnection, resource: RecordResourceName): Promise<ListedBefore[]> {
  const reader = await connection.runAndReadAll(
    `SELECT api_name, last_seen_at = max(last_seen_at) OVER () AS latest FROM property_definitions WHERE resource = $1`,
    [resource],
  );
  return reader.getRowObjects().map((r) => ({ apiName: String(r.api_name), inLastListing: r.latest === true }));
}

/**
 * The properties whose listing says the service now gives stored values differently, though no `updated_at` moved:
 * a type change converts them, and a property the last listing named and this one does not takes them away. (One
 * listed again needs nothing: its column stayed in the plan, so records that still carried it kept writing it.) Pure.
 */
export function valuesRewrittenBy(before: readonly ListedBefore[], listed: ReadonlySet<string>, changes: readonly TypeChange[]): string[] {
  const names = new Set(changes.map((c) => c.apiName));
  for (const property of before) if (property.inLastListing && !listed.has(property.apiName)) names.add(property.apiName);
  return [...names].sort();
}

/** One row per option of the listed definitions that have options; a repeated value keeps its last label. */
export function optionRows(
  resource: RecordResourceName,
  definitions: readonly PropertyDefinition[],
  firstKey: number,
): { resource: string; api_name: string; property_key: number; position: number; value: string; label: string | null }[] {
  const latest = new Map(definitions.map((d) => [d.api_name, d]));
  const rows: ReturnType<typeof optionRows> = [];
  let key = firstKey;
  for (const definition of latest.values()) {
    const options = definition.options ?? [];
    if (options.length === 0) continue;
    const byValue = new Map<string, { position: number; label: string | null }>();
    options.forEach((o, position) => {
      const kept = byValue.get(o.value);
      byValue.set(o.value, { position: kept?.position ?? position, label: o.label ?? null });
    });
    for (const [value, { position, label }] of byValue) {
      rows.push({ resource, api_name: definition.api_name, property_key: key, position, value, label });
    }
    key += 1;
  }
  return rows;
}

/** Options compared regardless of keys and row order. */
function optionSignature(rows: readonly { api_name: string; position: number; value: string; label: string | null }[]): string {
  return JSON.stringify(rows.map((r) => JSON.stringify([r.api_name, r.position, r.value, r.label])).sort());
}

/** Record type changes and replace the resource's options. `before` is what was stored before this listing. */
export async function recordDefinitionChanges(
  connection: DuckDBConnection,
  resource: RecordResourceName,
  before: readonly ColumnAssignment[],
  plan: readonly ColumnPlan[],
  definitions: readonly PropertyDefinition[],
  seenAt: string,
): Promise<TypeChange[]> {
  const changes = typeChanges(before, plan);
  for (const change of changes) {
    await connection.run(
      `INSERT INTO property_type_changes (resource, api_name, old_type, new_type, old_column, new_column, changed_at)
       VALUES ($1, $2, $3, $4, $5, $6, CAST($7 AS TIMESTAMPTZ))`,
      [resource, change.apiName, change.oldType, change.newType, change.oldColumn, change.newColumn, seenAt],
    );
  }

  // Unchanged options keep their rows and keys, so the views need not be rebuilt for them.
  const stored = await connection.runAndReadAll(`SELECT api_name, position, value, label FROM property_options WHERE resource = $1`, [
    resource,
  ]);
  const storedRows = stored.getRowObjects().map((r) => ({
    api_name: String(r.api_name),
    position: Number(r.position),
    value: String(r.value),
    label: r.label === null ? null : String(r.label),
  }));
  if (optionSignature(storedRows) === optionSignature(optionRows(resource, definitions, 0))) return changes;

  await connection.run(`DELETE FROM property_options WHERE resource = $1`, [resource]);
  // Keys only have to be unique and agree with the views, which are rebuilt in this same transaction.
  const reader = await connection.runAndReadAll(`SELECT coalesce(max(property_key), 0)::INTEGER AS k FROM property_options`);
  const firstKey = Number(reader.getRowObjects()[0]?.k ?? 0) + 1;
  const rows = optionRows(resource, definitions, firstKey);
  if (rows.length > 0) {
    await stageRows(
      connection,
      OPTION_STAGE,
      [
        { name: 'resource', sqlType: 'VARCHAR' },
        { name: 'api_name', sqlType: 'VARCHAR' },
        { name: 'property_key', sqlType: 'INTEGER' },
        { name: 'position', sqlType: 'INTEGER' },
        { name: 'value', sqlType: 'VARCHAR' },
        { name: 'label', sqlType: 'VARCHAR' },
      ],
      rows,
    );
    await connection.run(`INSERT INTO property_options BY NAME SELECT * FROM ${quoteIdentifier(OPTION_STAGE)}`);
    await connection.run(`DROP TABLE ${quoteIdentifier(OPTION_STAGE)}`);
  }
  return changes;
}
