/**
 * DDL: the fixed tables (schema/*.sql) and the record tables, whose columns follow property definitions.
 * Evolution only adds: a new property adds a column; a type change adds a column for the new type and keeps
 * the old one (frozen); no column is dropped or renamed. Many columns at once rebuild the table (`rebuildAdds`):
 * the same rows and columns, plus the new ones.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { timestampTZValue, type DuckDBConnection } from '@duckdb/node-api';
import type { Logger } from 'pino';
import type { RecordResourceName } from '../core/resources.js';
import type { PropertyDefinition } from '../core/types.js';
import type { ColumnPlan } from './types.js';
import { sqlTypeFor } from './column-types.js';
import { assignColumnNames, quoteIdentifier, SYSTEM_COLUMNS, type ColumnAssignment } from './identifiers.js';
import { recordColumns, SELECTIONS_TYPE, type StageColumn } from './rows.js';
import { copyFilling, markColumnsForFill, type CopyOptions, type CopyResult } from './column-fill.js';
import { stageRows } from './staging.js';
import { VERSION_COLUMNS } from './history-names.js';
import { parseInstantMicros } from '../core/time.js';
import { tableColumns, tableColumnTypes, type StoredColumn } from './catalog.js';

/** The fixed tables' DDL files, in the order they run. */
export const FIXED_SCHEMA_FILES = ['warehouse-fixed-tables.sql', 'warehouse-analyst-tables.sql'] as const;

/**
 * The repository's `schema/` directory: found by walking up from this module, so it works both from the
 * TypeScript sources (src/warehouse/) and from the build (dist/src/warehouse/).
 */
export function findSchemaDir(fromUrl: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(fromUrl));
  for (;;) {
    const candidate = join(dir, 'schema');
    if (existsSync(join(candidate, FIXED_SCHEMA_FILES[0]))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`schema/${FIXED_SCHEMA_FILES[0]} not found above ${fileURLToPath(fromUrl)}`);
    dir = parent;
  }
}

export function fixedSchemaSql(schemaDir: string = findSchemaDir()): string {
  return FIXED_SCHEMA_FILES.map((file) => readFileSync(join(schemaDir, file), 'utf8')).join('\n');
}

export async function ensureFixedSchema(connection: DuckDBConnection, sql: string): Promise<void> {
  await connection.run(sql);
  await widenSummarySelections(connection);
}

/**
 * Warehouses made before selections' integers were BIGINT get the wider type: an `order` past 2^31 (the spec gives
 * no range) failed every commit of its log's batch. Rewrites the column once; a no-op after.
 */
async function widenSummarySelections(connection: DuckDBConnection): Promise<void> {
  const columns = await tableColumnTypes(connection, 'meeting_log_summaries');
  const type = columns?.find((c) => c.columnName === 'selections')?.sqlType ?? '';
  if (!type.includes('INTEGER')) return;
  await connection.run(`ALTER TABLE meeting_log_summaries ALTER COLUMN selections TYPE ${SELECTIONS_TYPE}`);
}

/** DDL of a record table: envelope, property columns in listing order, then the system columns. */
export function recordTableDdl<C extends Pick<ColumnPlan, 'columnName' | 'sqlType'>>(table: string, plan: readonly C[]): string {
  const columns = [
    // Unique by construction, not by an index (see upsertRecords): DuckDB holds index keys in memory.
    'id VARCHAR NOT NULL',
    'created_at TIMESTAMPTZ',
    'updated_at TIMESTAMPTZ',
    ...plan.map((p) => `${quoteIdentifier(p.columnName)} ${p.sqlType}`),
    '_properties JSON',
    '_synced_at TIMESTAMPTZ',
    '_deleted_at TIMESTAMPTZ',
    '_content_hash VARCHAR',
    // The record's current version (history.ts): its live row is the version.
    ...VERSION_COLUMNS.map((c) => `${c.name} ${c.sqlType}`),
  ];
  return `CREATE TABLE IF NOT EXISTS ${quoteIdentifier(table)} (${columns.join(', ')})`;
}

/**
 * The table's columns that a batch of `plan` does not write: those kept after a type change (the plan holds
 * every assignment, listed now or not); the version columns are the upsert's own. Compared as DuckDB compares
 * names, case-insensitively.
 */
export function keptColumns(columns: readonly string[], plan: readonly ColumnPlan[]): string[] {
  const written = new Set(
    [...recordColumns(plan).map((c) => c.name), ...VERSION_COLUMNS.map((c) => c.name)].map((name) => name.toLowerCase()),
  );
  return columns.filter((name) => !written.has(name.toLowerCase()));
}

/** Every column assignment of a resource, listed now or not (unlisted properties keep their column). */
export async function readAssignments(connection: DuckDBConnection, resource: RecordResourceName): Promise<ColumnAssignment[]> {
  const reader = await connection.runAndReadAll(
    `SELECT api_name, column_name, property_type FROM property_definitions WHERE resource = $1 ORDER BY first_seen_at, api_name`,
    [resource],
  );
  return reader.getRowObjects().map((r) => ({
    apiName: String(r.api_name),
    columnName: String(r.column_name),
    propertyType: String(r.property_type),
  }));
}

export function planFromAssignments(assignments: readonly ColumnAssignment[]): ColumnPlan[] {
  return assignments.map((a) => ({ ...a, sqlType: sqlTypeFor(a.propertyType) }));
}

/** Create the table with no property columns when it is missing (a batch before any definitions). */
export async function ensureRecordTable(connection: DuckDBConnection, table: string): Promise<void> {
  await connection.run(recordTableDdl(table, []));
  await ensureContentHashColumn(connection, table);
}

/** Tables created before content hashes get the column; their rows get a hash when next written. */
export async function ensureContentHashColumn(connection: DuckDBConnection, table: string): Promise<void> {
  await connection.run(`ALTER TABLE ${quoteIdentifier(table)} ADD COLUMN IF NOT EXISTS _content_hash VARCHAR`);
}

/** How new columns reach a table that exists (see `ApplyDefinitionsOptions.addColumnsBy`). */
export type AddColumnsBy = 'auto' | 'rebuild' | 'alter';

export interface ApplyDefinitionsOptions {
  logger?: Logger;
  /**
   * `rebuild`: the table is copied into a new one with the new columns, filled as it goes (`rebuildWithColumns`);
   * `alter`: an ALTER per column, filled by page after the transaction (`fillPendingColumns`); `auto`: as
   * `rebuildAdds` decides. @defaultValue 'auto'
   */
  addColumnsBy?: AddColumnsBy;
  /** The rebuild's copy: its page size, a hook after each page. */
  copy?: CopyOptions;
  /**
   * What the caller read of the resource since its last write (every assignment, and the table's columns, null
   * without a table), so that they are not read again. @defaultValue read here
   */
  stored?: { assignments: readonly ColumnAssignment[]; columns: readonly string[] | null };
}

/** An added column is worth this many columns copied as they are (see `rebuildAdds`). */
const REBUILD_RATIO = 3;

/**
 * Whether adding `added` columns to a table of `width` columns rebuilds it rather than altering it. A rebuild
 * copies every column of every row once, whatever is added; ALTERs are cheap and so is their fill for a few
 * columns, but the fill UPDATEs each new column of each row, which costs several times an append, and ALTERs in
 * one transaction hold memory that grows with the square of their count. So a wide table gaining a few columns is
 * altered (in less time and memory), and one gaining many rebuilt.
 */
export function rebuildAdds(added: number, width: number): boolean {
  return added > 0 && added * REBUILD_RATIO >= width;
}

/**
 * Record the definitions and evolve the table; runs inside the caller's transaction. Columns added to a table
 * that exists come by a rebuild, filled from each stored row's `_properties` before this transaction commits, or
 * by ALTER, marked as awaiting fill (see column-fill.ts): the caller then runs `fillPendingColumns` after
 * committing. Returns the plan of the listed definitions.
 */
export async function applyDefinitions(
  connection: DuckDBConnection,
  resource: RecordResourceName,
  table: string,
  definitions: readonly PropertyDefinition[],
  seenAt: string,
  options: ApplyDefinitionsOptions = {},
): Promise<ColumnPlan[]> {
  const { logger } = options;
  const existing = options.stored?.assignments ?? (await readAssignments(connection, resource));
  const columnsBefore = options.stored ? options.stored.columns : await tableColumns(connection, table);
  const { plan, added } = assignColumnNames(existing, definitions, columnsBefore ?? []);
  const previous = new Map(existing.map((a) => [a.apiName, a]));
  for (const column of added) {
    const before = previous.get(column.apiName);
    // Analysts' queries keep reading the old column; say where the new values go.
    if (before) {
      logger?.warn(
        {
          resource,
          apiName: column.apiName,
          from: before.propertyType,
          to: column.propertyType,
          oldColumn: before.columnName,
          newColumn: column.columnName,
        },
        'property changed type: new column added, old column kept with its values',
      );
    }
  }

  if (columnsBefore === null) {
    await connection.run(recordTableDdl(table, plan));
  } else {
    await ensureContentHashColumn(connection, table);
    const present = new Set(columnsBefore.map((c) => c.toLowerCase()));
    // A persisted column that is missing (dropped by hand) is recreated under the same name.
    const missing = plan.filter((p) => !present.has(p.columnName.toLowerCase()));
    const by = options.addColumnsBy ?? 'auto';
    if (missing.length > 0 && (by === 'rebuild' || (by === 'auto' && rebuildAdds(missing.length, columnsBefore.length)))) {
      const started = performance.now();
      const copy = await rebuildWithColumns(connection, table, missing, options.copy);
      const ms = Math.round(performance.now() - started);
      logger?.debug(
        { table, added: missing.length, filled: copy.filled.length, rows: copy.rows, pages: copy.pages, ms },
        'table rebuilt with new columns',
      );
    } else {
      // DuckDB takes one ALTER per statement (a list of them is a parser error): one script of them, one call.
      if (missing.length > 0) {
        await connection.run(
          missing.map((c) => `ALTER TABLE ${quoteIdentifier(table)} ADD COLUMN ${quoteIdentifier(c.columnName)} ${c.sqlType};`).join('\n'),
        );
      }
      // Rows already stored carry the value in _properties: the new columns are filled from there after this
      // transaction, page by page (`fillPendingColumns`), from the marker this transaction commits with them.
      await markColumnsForFill(connection, table, missing);
    }
  }

  await upsertDefinitions(connection, resource, definitions, plan, seenAt);
  return plan;
}

/** Where a rebuild copies the table to, in its transaction; never seen outside it. */
function rebuildTableName(table: string): string {
  return `_salesync_rebuild_${table}`;
}

/**
 * Replace `table` with a copy, inside the caller's transaction: created as `recordTableDdl` creates a table (the
 * stored property columns, kept ones included, with their types and in their order, then `added`, before the
 * system columns), then `fill`ed from the table (`stored` are its columns), the old table dropped and the copy
 * renamed. A failure anywhere rolls back to the table as it was. The caller rebuilds the views, which DuckDB binds
 * by name.
 */
export async function rebuildTable<T>(
  connection: DuckDBConnection,
  table: string,
  added: readonly ColumnPlan[],
  fill: (scratch: string, stored: readonly StoredColumn[]) => Promise<T>,
): Promise<T> {
  const stored = (await tableColumnTypes(connection, table)) ?? [];
  const system = new Set<string>(SYSTEM_COLUMNS);
  const properties = stored.filter((c) => !system.has(c.columnName.toLowerCase()));
  const scratch = rebuildTableName(table);
  await connection.run(`DROP TABLE IF EXISTS ${quoteIdentifier(scratch)}`);
  await connection.run(recordTableDdl(scratch, [...properties, ...added]));
  const result = await fill(scratch, stored);
  await connection.run(`DROP TABLE ${quoteIdentifier(table)}`);
  await connection.run(`ALTER TABLE ${quoteIdentifier(scratch)} RENAME TO ${quoteIdentifier(table)}`);
  return result;
}

/** `rebuildTable` with the `added` columns too, every row copied with them filled from `_properties` (`copyFilling`). */
export async function rebuildWithColumns(
  connection: DuckDBConnection,
  table: string,
  added: readonly ColumnPlan[],
  copy: CopyOptions = {},
): Promise<CopyResult> {
  return rebuildTable(connection, table, added, (scratch, stored) =>
    copyFilling(
      connection,
      table,
      scratch,
      stored.map((c) => c.columnName),
      added,
      copy,
    ),
  );
}

async function upsertDefinitions(
  connection: DuckDBConnection,
  resource: RecordResourceName,
  definitions: readonly PropertyDefinition[],
  plan: readonly ColumnPlan[],
  seenAt: string,
): Promise<void> {
  const columnOf = new Map(plan.map((p) => [p.apiName, p.columnName]));
  const latest = new Map(definitions.map((d) => [d.api_name, d]));
  if (latest.size === 0) return;
  // Staged, then one set-based upsert: a prepared statement per definition took seconds for thousands of them.
  await stageRows(
    connection,
    DEFINITIONS_STAGE,
    DEFINITION_COLUMNS,
    [...latest.values()].map((d) => ({
      api_name: d.api_name,
      column_name: columnOf.get(d.api_name) ?? d.api_name,
      display_name: d.display_name,
      property_type: d.property_type,
      is_core: d.is_core,
      is_required_on_create: d.is_required_on_create,
      options: JSON.stringify(d.options ?? []),
    })),
  );
  await connection.run(
    `INSERT INTO property_definitions
       (resource, api_name, column_name, display_name, property_type, is_core, is_required_on_create, options, first_seen_at, last_seen_at)
     SELECT $1, api_name, column_name, display_name, property_type, is_core, is_required_on_create, CAST(options AS JSON), $2, $2
     FROM ${quoteIdentifier(DEFINITIONS_STAGE)}
     ON CONFLICT (resource, api_name) DO UPDATE SET
       column_name = excluded.column_name, display_name = excluded.display_name,
       property_type = excluded.property_type, is_core = excluded.is_core,
       is_required_on_create = excluded.is_required_on_create, options = excluded.options,
       last_seen_at = excluded.last_seen_at`,
    [resource, timestampTZValue(parseInstantMicros(seenAt) ?? 0n)],
  );
  await connection.run(`DROP TABLE ${quoteIdentifier(DEFINITIONS_STAGE)}`);
}

const DEFINITIONS_STAGE = '_salesync_definitions';
const DEFINITION_COLUMNS: readonly StageColumn[] = [
  { name: 'api_name', sqlType: 'VARCHAR' },
  { name: 'column_name', sqlType: 'VARCHAR' },
  { name: 'display_name', sqlType: 'VARCHAR' },
  { name: 'property_type', sqlType: 'VARCHAR' },
  { name: 'is_core', sqlType: 'BOOLEAN' },
  { name: 'is_required_on_create', sqlType: 'BOOLEAN' },
  { name: 'options', sqlType: 'VARCHAR' },
];
