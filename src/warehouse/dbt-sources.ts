/**
 * A dbt `sources.yml` for dbt-duckdb, read from the warehouse's own catalog: every table and view with its
 * columns, display names as descriptions, `unique`/`not_null` tests on ids, and freshness on `_synced_at`.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { stringify } from 'yaml';
import { RECORD_RESOURCE_NAMES, resourceDescriptor } from '../core/resources.js';
import { isHistoryStore } from './history-names.js';

export interface CatalogColumn {
  name: string;
  type: string;
  /** What the column holds, for the analyst: a property's display name and api_name, or a fixed column's role. */
  description: string | null;
}

export interface CatalogRelation {
  name: string;
  kind: 'table' | 'view';
  columns: CatalogColumn[];
}

export interface DbtSourcesOptions {
  /** The dbt source name (`{{ source('salesync', 'deals') }}`). @defaultValue 'salesync' */
  sourceName?: string;
  /**
   * The database dbt-duckdb knows the warehouse by, when the dbt project attaches it (`attach: [{ path, alias }]`).
   * @defaultValue none: the warehouse is the profile's own `path`
   */
  database?: string;
  /** Hours without a sync before dbt warns, and before it errors. @defaultValue 24 and 48 */
  warnAfterHours?: number;
  errorAfterHours?: number;
}

/** Tables whose rows are one record each by `id`; their history and views repeat ids or drop deleted rows. */
const RECORD_TABLES = new Set<string>([...RECORD_RESOURCE_NAMES.map((r) => resourceDescriptor(r).table), 'users']);

const RELATION_DESCRIPTIONS: Readonly<Record<string, string>> = {
  users: 'Users of the organization, replaced by a complete listing each run; vanished users have _deleted_at.',
  meeting_log_summaries: 'Summaries of each meeting log, as its single-record view last returned them.',
  meeting_log_summary_reads: "When each meeting log's summaries were last read, and when they are next due.",
  property_definitions: 'Property definitions as last listed by the service, with the column each is stored in.',
  property_options: "Labels of select properties' options.",
  property_type_changes: 'Properties whose type the service changed, and what became of their stored values.',
  sync_state: "Watermarks and checkpoints of each resource's walks.",
  sync_runs: 'Every sync, backfill, reconcile and summaries run, with its figures and outcome.',
  reconcile_seen: 'Ids listed by a reconcile sweep under way.',
  rejected_records: 'Records in quarantine: listed by the service but not valid, with the reason and the run.',
  deal_stage_history: "Each deal's stretches in one stage, from the versions of deals_history; valid_to null for the current one.",
  changes: 'The change feed: one row per version of every record, in commit order (change_seq), with what changed.',
};

const COLUMN_DESCRIPTIONS: Readonly<Record<string, string>> = {
  id: "The record's 18-character id, as issued by the service.",
  created_at: 'When the record was created (service clock).',
  updated_at: "When the record's values last changed (service clock).",
  _synced_at: 'When salesync last wrote this row.',
  _deleted_at: 'When a complete reconcile sweep confirmed the record gone; null while it exists.',
  _content_hash: 'SHA-256 of the canonical properties and both timestamps: what a reconcile compares.',
  _version_from: "When the row's version took effect, where not its updated_at (valid_from of the *_history view).",
  _version_source: "What wrote the row's version (source of the *_history view).",
  _version_run_id: "The sync_runs row that wrote the row's version.",
  _version_observed_at: "When salesync committed the row's version.",
  _version_seq: "The row's version in commit order (change_seq of the *_history view).",
  valid_from: 'When this version took effect: its updated_at when that moved forward, else when the change was observed.',
  valid_to: 'When the next version took effect; null while this one is current.',
  is_current: 'This is the version the live row holds.',
  valid_from_basis: "What valid_from is: 'updated_at', or 'observed' (a change the service did not date, or dated backwards).",
  source: 'What wrote this version: incremental, backfill, reconcile, deleted, restored or migrated.',
  run_id: 'The sync_runs row that wrote this version.',
  observed_at: 'When salesync committed this version (its clock).',
  change_seq: 'Commit order across every resource: the change feed cursor.',
  deleted: 'This version marks the record deleted.',
};

function relationDescription(name: string): string | null {
  if (RELATION_DESCRIPTIONS[name]) return RELATION_DESCRIPTIONS[name]!;
  for (const resource of RECORD_RESOURCE_NAMES) {
    const table = resourceDescriptor(resource).table;
    if (name === table) return `Every ${resource} record, one row per id, custom properties in typed columns.`;
    if (name === `${table}_history`) return `Every version of each ${resource} record as the mirror held it (SCD type 2), in commit order.`;
    if (name === `${table}_history_view`)
      return `Every version of each ${resource} record with display names as column names and labels for select values.`;
    if (name === `${table}_view`) return `Live ${resource} records with display names as column names and labels for select values.`;
  }
  return null;
}

/** The warehouse's tables and views in the main schema, with their columns and what each column holds. */
export async function readCatalog(connection: DuckDBConnection): Promise<CatalogRelation[]> {
  const views = new Set(
    (
      await connection.runAndReadAll(
        `SELECT view_name FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal`,
      )
    )
      .getRowObjects()
      .map((r) => String(r.view_name)),
  );
  const columns = (
    await connection.runAndReadAll(
      `SELECT table_name, column_name, data_type FROM duckdb_columns()
       WHERE database_name = current_database() AND schema_name = 'main' ORDER BY table_name, column_index`,
    )
  ).getRowObjects();
  // A property is named by its display name in the view and by its column name in the table.
  const properties = new Map<string, { byColumn: Map<string, string>; byDisplay: Map<string, string> }>();
  const hasDefinitions = columns.some((c) => c.table_name === 'property_definitions');
  if (hasDefinitions) {
    const rows = (
      await connection.runAndReadAll(`SELECT resource, api_name, column_name, display_name FROM property_definitions`)
    ).getRowObjects();
    for (const row of rows) {
      const resource = RECORD_RESOURCE_NAMES.find((r) => r === row.resource);
      if (!resource) continue;
      const table = resourceDescriptor(resource).table;
      const entry = properties.get(table) ?? { byColumn: new Map(), byDisplay: new Map() };
      const display = row.display_name === null ? null : String(row.display_name);
      const api = String(row.api_name);
      entry.byColumn.set(String(row.column_name), display ? `${display} (${api})` : api);
      if (display) entry.byDisplay.set(display, `${display} (${api})`);
      properties.set(table, entry);
    }
  }
  const relations = new Map<string, CatalogRelation>();
  for (const row of columns) {
    const name = String(row.table_name);
    if (isHistoryStore(name)) continue; // read through its view, `<table>_history`
    const relation = relations.get(name) ?? { name, kind: views.has(name) ? 'view' : 'table', columns: [] };
    const column = String(row.column_name);
    const table = name.replace(/_(history_view|view|history)$/, '');
    const known = properties.get(table);
    const description = COLUMN_DESCRIPTIONS[column] ?? known?.byColumn.get(column) ?? known?.byDisplay.get(column) ?? null;
    relation.columns.push({ name: column, type: String(row.data_type), description });
    relations.set(name, relation);
  }
  return [...relations.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** The catalog as dbt's `sources.yml` (version 2). Pure. */
export function dbtSourcesYaml(catalog: readonly CatalogRelation[], options: DbtSourcesOptions = {}): string {
  const freshness = {
    warn_after: { count: options.warnAfterHours ?? 24, period: 'hour' },
    error_after: { count: options.errorAfterHours ?? 48, period: 'hour' },
  };
  const tables = catalog.map((relation) => {
    const synced = relation.columns.some((c) => c.name === '_synced_at');
    const oneRowPerId = relation.kind === 'table' && RECORD_TABLES.has(relation.name);
    const description = relationDescription(relation.name);
    return {
      name: relation.name,
      ...(description ? { description } : {}),
      ...(synced ? { loaded_at_field: '_synced_at', freshness } : {}),
      columns: relation.columns.map((column) => ({
        name: column.name,
        data_type: column.type,
        ...(column.description ? { description: column.description } : {}),
        ...(column.name === 'id' && oneRowPerId
          ? { data_tests: ['unique', 'not_null'] }
          : column.name === 'id'
            ? { data_tests: ['not_null'] }
            : {}),
      })),
    };
  });
  const document = {
    version: 2,
    sources: [
      {
        name: options.sourceName ?? 'salesync',
        description: 'The Sales Records Service, mirrored by salesync.',
        ...(options.database ? { database: options.database } : {}),
        schema: 'main',
        tables,
      },
    ],
  };
  return `# Written by \`salesync dbt-sources\`: rerun it after the service adds properties.\n${stringify(document, { lineWidth: 0 })}`;
}
