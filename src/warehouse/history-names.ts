/** The names of a record table's history: the view analysts query and the table it reads (no imports: anyone may). */

/** The history view analysts query: every version with its properties. */
export function historyTableName(table: string): string {
  return `${table}_history`;
}

const STORE_SUFFIX = '_history_store';

/** The table the versions are stored in; current versions' `properties` are NULL there (the live row has them). */
export function historyStoreName(table: string): string {
  return `${table}${STORE_SUFFIX}`;
}

/** Whether a table of the warehouse is a history store (internal: readers read its view). */
export function isHistoryStore(name: string): boolean {
  return name.endsWith(STORE_SUFFIX);
}
