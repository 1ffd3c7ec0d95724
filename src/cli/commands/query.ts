import { createWarehouse } from '../../sync/index.js';
import { assertReadableIfPresent, warehouseMissing } from '../../warehouse/index.js';
import type { CliRuntime } from '../runtime.js';
import { formatTable } from '../table.js';

/** The most rows `query` prints: a result is streamed and read no further, so a huge one never fills memory. */
export const QUERY_MAX_ROWS = 10_000;

/**
 * Run SQL against the published warehouse (WAREHOUSE_PATH) and print the rows. Never writes, whatever is on disk:
 * READ_ONLY (a WAL beside the file is left alone), external access off and locked, and any statement that is not
 * a read is refused before anything runs (`query_refused`). Never waits for a sync: the writer has its own file.
 */
export async function queryCommand(runtime: CliRuntime, sql: string, options: { json?: boolean }): Promise<void> {
  // The published file: a missing one says run a sync; one this user may not read says so (warehouse_unreadable).
  if (assertReadableIfPresent(runtime.config.warehousePath) === 'missing') {
    throw warehouseMissing(runtime.config.warehousePath);
  }
  const warehouse = createWarehouse(runtime.config, runtime.logger);
  const read = await warehouse.query(sql, { maxRows: QUERY_MAX_ROWS }).finally(() => warehouse.close());
  const rows = read.slice(0, QUERY_MAX_ROWS);
  const cut = read.length > QUERY_MAX_ROWS;
  const more =
    `the first ${QUERY_MAX_ROWS.toLocaleString('en-US')} rows of more, which were not read: add a LIMIT or an aggregate, ` +
    'or open the file itself (DuckDB, `salesync export`) for whole tables';
  if (cut) runtime.logger.warn({ maxRows: QUERY_MAX_ROWS }, `query printed ${more}`);
  if (options.json) {
    runtime.out(JSON.stringify(rows, null, 2));
    return;
  }
  const headers = Object.keys(rows[0] ?? {});
  runtime.out(
    formatTable(
      headers,
      rows.map((row) => headers.map((h) => cellText(row[h]))),
    ),
  );
  runtime.out(cut ? `(${more})` : `(${rows.length} ${rows.length === 1 ? 'row' : 'rows'})`);
}

function cellText(value: unknown): string | number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}
