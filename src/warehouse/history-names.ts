/** The names of a record table's history: the view analysts query and the table it reads (no imports: anyone may). */

/** The history view analysts query: every version with its properties. */
export function historyTableName(table: string): string {
  return `${table}_history`;
}

const STORE_SUFFIX = '_history_store';

/** The table the closed versions are stored in; the current one of each record is its live row. */
export function historyStoreName(table: string): string {
  return `${table}${STORE_SUFFIX}`;
}

/** Whether a table of the warehouse is a history store (internal: readers read its view). */
export function isHistoryStore(name: string): boolean {
  return name.endsWith(STORE_SUFFIX);
}

/**
 * The live row's columns that say which version it is (a record's current version is its live row):
 * `_version_from` is NULL when the version is valid from its `updated_at`, else when it was observed.
 */
export const VERSION_COLUMNS = [
  { name: '_version_from', sqlType: 'TIMESTAMPTZ' },
  { name: '_version_source', sqlType: 'VARCHAR' },
  { name: '_version_run_id', sqlType: 'VARCHAR' },
  { name: '_version_observed_at', sqlType: 'TIMESTAMPTZ' },
  { name: '_version_seq', sqlType: 'BIGINT' },
] as const;

export type VersionColumn = (typeof VERSION_COLUMNS)[number]['name'];
