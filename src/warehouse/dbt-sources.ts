/**
 * The warehouse's own catalog for dbt `sources.yml` (dbt-sources-yaml.ts): every table and view with its columns,
 * display names and fixed columns' roles as descriptions.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
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
