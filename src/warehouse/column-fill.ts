/**
 * Filling columns added to a table that already holds rows, from each row's `_properties`, with the cast incoming
 * records get (`toColumnValue`, staged through the same `read_json` types as their writes), so a filled cell
 * equals a freshly written one. Two ways, as `applyDefinitions` (schema.ts) decides:
 * - **While copying** (`copyFilling`): the table is rebuilt in the transaction that records the definitions, and
 *   each page of stored rows is appended to the new table with its new cells. Appends are cheap where an UPDATE
 *   of many columns is not; the transaction commits whole or not at all, so nothing is left to resume.
 * - **By page, afterwards** (`fillPendingColumns`): columns added by ALTER are marked as awaiting fill
 *   (`pending_column_fills`) in the definitions' transaction (`markColumnsForFill`); the rows are then filled
 *   page by page, in id order, each page its own transaction that also moves the marker on, followed by a
 *   checkpoint (DuckDB holds an UPDATE's changes in memory until one). A crash between pages leaves the marker
 *   where the last page committed, and the next `fillPendingColumns` goes on from there. Until then the rows not
 *   yet filled read NULL in those columns; their values are in `_properties` all along, and rows written
 *   meanwhile are written whole.
 */
import { listValue, type DuckDBConnection, type DuckDBListValue } from '@duckdb/node-api';
import type { Logger } from 'pino';
import type { PropertyValue } from '../core/types.js';
import { SalesyncError } from '../core/errors.js';
import type { ColumnPlan } from './types.js';
import type { SqlType } from './column-types.js';
import { quoteIdentifier } from './identifiers.js';
import { ndjsonKey, NdjsonRows, toColumnValue, type StageColumn } from './rows.js';
import { withNdjsonSource } from './staging.js';
import { inTransaction } from './connection.js';
import { tableColumns } from './catalog.js';

/** Columns awaiting fill, one row each, with the id the fill has reached (rows with a greater id remain). */
export const COLUMN_FILLS_TABLE = 'pending_column_fills';

/** @defaultValue of `FillOptions.pageCells`: cells (rows × columns) one page updates. */
export const FILL_PAGE_CELLS = 2_000_000;
/** @defaultValue of `FillOptions.maxPageRows`. */
export const FILL_PAGE_MAX_ROWS = 20_000;

/** One committed page of a fill, as `FillOptions.onPage` hears of it. */
export interface FillPage {
  table: string;
  /** The columns this page filled. */
  columns: readonly string[];
  /** Rows the page read (at most the page size); `written` of them held a value for one of the columns. */
  rows: number;
  written: number;
  /** The page size in rows: `pageCells` ÷ columns, within 1 … `maxPageRows`. */
  pageRows: number;
  /** The id range the page covered: ids greater than `after`, up to `through`. */
  after: string;
  through: string | null;
  /** Whether this page finished these columns (their marker is gone). */
  done: boolean;
}

export interface FillOptions {
  /** Cells (rows × columns) one page reads and updates. @defaultValue FILL_PAGE_CELLS */
  pageCells?: number;
  /** The most rows one page takes, however few its columns. @defaultValue FILL_PAGE_MAX_ROWS */
  maxPageRows?: number;
  /** Called after each page has committed (and checkpointed); a throw stops the fill there, as a crash would. */
  onPage?: (page: FillPage) => void | Promise<void>;
  logger?: Logger;
}

export interface FillResult {
  pages: number;
  /** Rows updated, summed over pages. */
  written: number;
}

interface PendingColumn {
  columnName: string;
  apiName: string;
  sqlType: SqlType;
  after: string;
}

const MARKER_DDL = `CREATE TABLE IF NOT EXISTS ${quoteIdentifier(COLUMN_FILLS_TABLE)} (
  table_name VARCHAR NOT NULL, column_name VARCHAR NOT NULL, api_name VARCHAR NOT NULL, sql_type VARCHAR NOT NULL,
  filled_through VARCHAR NOT NULL)`;

async function markerExists(connection: DuckDBConnection): Promise<boolean> {
  const reader = await connection.runAndReadAll(
    `SELECT count(*)::INTEGER AS n FROM duckdb_tables()
     WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1`,
    [COLUMN_FILLS_TABLE],
  );
  return Number(reader.getRowObjects()[0]?.n ?? 0) > 0;
}

/**
 * Mark `columns` of `table` as awaiting fill from the first row; runs inside the caller's transaction, the one
 * that adds the columns. A table without rows has nothing to fill and gets no marker.
 */
export async function markColumnsForFill(connection: DuckDBConnection, table: string, columns: readonly ColumnPlan[]): Promise<void> {
  if (columns.length === 0) return;
  const rows = await connection.runAndReadAll(`SELECT 1 FROM ${quoteIdentifier(table)} LIMIT 1`);
  if (rows.getRows().length === 0) return;
  await connection.run(MARKER_DDL);
  // One statement for every column: the names travel as list parameters, never spliced into SQL.
  await connection.run(
    `INSERT INTO ${quoteIdentifier(COLUMN_FILLS_TABLE)} (table_name, column_name, api_name, sql_type, filled_through)
     SELECT $1, u.c, u.a, u.s, '' FROM (SELECT unnest(CAST($2 AS VARCHAR[])) AS c, unnest(CAST($3 AS VARCHAR[])) AS a,
       unnest(CAST($4 AS VARCHAR[])) AS s) AS u`,
    [table, listOf(columns.map((c) => c.columnName)), listOf(columns.map((c) => c.apiName)), listOf(columns.map((c) => c.sqlType))],
  );
}

function listOf(items: readonly string[]): DuckDBListValue {
  return listValue([...items]);
}

async function pendingColumns(connection: DuckDBConnection, table: string): Promise<PendingColumn[]> {
  if (!(await markerExists(connection))) return [];
  const reader = await connection.runAndReadAll(
    `SELECT column_name, api_name, sql_type, filled_through FROM ${quoteIdentifier(COLUMN_FILLS_TABLE)}
     WHERE table_name = $1 ORDER BY filled_through, column_name`,
    [table],
  );
  return reader.getRowObjects().map((r) => ({
    columnName: String(r.column_name),
    apiName: String(r.api_name),
    sqlType: String(r.sql_type) as SqlType,
    after: String(r.filled_through),
  }));
}

/** The table's columns, lowercased (DuckDB compares names case-insensitively). */
async function presentColumns(connection: DuckDBConnection, table: string): Promise<Set<string>> {
  return new Set(((await tableColumns(connection, table)) ?? []).map((name) => name.toLowerCase()));
}

/**
 * Each row of `page` (id, `_properties` text) as an NDJSON line holding the id (`c0`) and the cast of each
 * column's property (`c1`…), cast as incoming records are (`toColumnValue`). A NULL cell is left out (`read_json`
 * reads a missing key as NULL), and a row with none of the properties is left out altogether.
 */
export function fillLines(
  page: readonly (readonly unknown[])[],
  columns: readonly Pick<PendingColumn, 'apiName' | 'sqlType'>[],
): NdjsonRows {
  // Property → the positions of its columns (two, when a type change left an old column awaiting fill too).
  const positions = new Map<string, number[]>();
  columns.forEach((column, i) => {
    const list = positions.get(column.apiName);
    if (list) list.push(i);
    else positions.set(column.apiName, [i]);
  });
  // Each member written as JSON.stringify would write it in an object (keys of our own making only, never a
  // property name): concatenated, not an object built key by key, which V8 serializes on its slow path.
  const members = columns.map((_, i) => `,${JSON.stringify(ndjsonKey(i + 1))}:`);
  const idKey = `{${JSON.stringify(ndjsonKey(0))}:`;
  const lines = new NdjsonRows();
  for (const [id, props] of page) {
    if (props === null || props === undefined) continue;
    const properties = JSON.parse(String(props)) as Record<string, PropertyValue>;
    let cells = '';
    for (const apiName of Object.keys(properties)) {
      const at = positions.get(apiName);
      if (at === undefined) continue;
      for (const i of at) {
        const value = toColumnValue(properties[apiName], columns[i]!.sqlType);
        if (value !== null) cells += `${members[i]!}${JSON.stringify(value)}`;
      }
    }
    if (cells !== '') lines.push(`${idKey}${JSON.stringify(String(id))}${cells}}`);
  }
  return lines;
}

/**
 * Fill `table`'s columns awaiting fill, page by page from where the marker says, until none is left (the marker
 * table goes with its last row). Runs outside any transaction: each page is one, followed by a checkpoint. Columns
 * marked at different times fill from their own points (the furthest behind first). A column no longer in the
 * table (purged) is unmarked.
 */
export async function fillPendingColumns(connection: DuckDBConnection, table: string, options: FillOptions = {}): Promise<FillResult> {
  const pageCells = options.pageCells ?? FILL_PAGE_CELLS;
  const maxPageRows = options.maxPageRows ?? FILL_PAGE_MAX_ROWS;
  const result: FillResult = { pages: 0, written: 0 };
  const marker = quoteIdentifier(COLUMN_FILLS_TABLE);
  const target = quoteIdentifier(table);
  for (;;) {
    const pending = await pendingColumns(connection, table);
    if (pending.length === 0) return result;
    const present = await presentColumns(connection, table);
    const gone = pending.filter((c) => !present.has(c.columnName.toLowerCase()));
    if (gone.length > 0) {
      await connection.run(`DELETE FROM ${marker} WHERE table_name = $1 AND column_name IN (SELECT unnest(CAST($2 AS VARCHAR[])))`, [
        table,
        listOf(gone.map((c) => c.columnName)),
      ]);
      await dropMarkerIfEmpty(connection);
      continue;
    }
    const after = pending[0]!.after;
    const columns = pending.filter((c) => c.after === after);
    const pageRows = Math.max(1, Math.min(maxPageRows, Math.floor(pageCells / columns.length)));
    const reader = await connection.runAndReadAll(
      `SELECT id, CAST(_properties AS VARCHAR) AS props FROM ${target} WHERE id > $1 ORDER BY id LIMIT ${pageRows}`,
      [after],
    );
    const page = reader.getRows();
    const lines = fillLines(page, columns);
    const through = page.length === 0 ? null : String(page[page.length - 1]![0]);
    const done = page.length < pageRows;
    const names = columns.map((c) => c.columnName);
    const stage: StageColumn[] = [
      { name: 'id', sqlType: 'VARCHAR' },
      ...columns.map((c, i) => ({ name: ndjsonKey(i + 1), sqlType: c.sqlType })),
    ];
    await withNdjsonSource(stage, lines, async (source) => {
      await inTransaction(connection, async () => {
        if (lines.rows > 0) {
          const set = columns.map((c, i) => `${quoteIdentifier(c.columnName)} = s.${quoteIdentifier(ndjsonKey(i + 1))}`).join(', ');
          await connection.run(`UPDATE ${target} AS t SET ${set} FROM ${source} AS s WHERE t.id = s.${quoteIdentifier(ndjsonKey(0))}`);
        }
        // The marker moves in the page's own transaction: it never says more (or less) was filled than was.
        if (done) {
          await connection.run(`DELETE FROM ${marker} WHERE table_name = $1 AND column_name IN (SELECT unnest(CAST($2 AS VARCHAR[])))`, [
            table,
            listOf(names),
          ]);
          await dropMarkerIfEmpty(connection);
        } else {
          await connection.run(
            `UPDATE ${marker} SET filled_through = $3 WHERE table_name = $1 AND column_name IN (SELECT unnest(CAST($2 AS VARCHAR[])))`,
            [table, listOf(names), through],
          );
        }
      });
    });
    // What the UPDATE changed stays in memory until a checkpoint: one per page keeps it to the page.
    if (lines.rows > 0) await connection.run('CHECKPOINT');
    result.pages += 1;
    result.written += lines.rows;
    options.logger?.debug({ table, columns: columns.length, rows: page.length, written: lines.rows, done }, 'column fill page');
    await options.onPage?.({ table, columns: names, rows: page.length, written: lines.rows, pageRows, after, through, done });
  }
}

async function dropMarkerIfEmpty(connection: DuckDBConnection): Promise<void> {
  const reader = await connection.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM ${quoteIdentifier(COLUMN_FILLS_TABLE)}`);
  if (Number(reader.getRowObjects()[0]?.n ?? 0) === 0) await connection.run(`DROP TABLE ${quoteIdentifier(COLUMN_FILLS_TABLE)}`);
}

/** @defaultValue of `CopyOptions.pageCells`: cells (rows × the copy's columns) one page of a copy takes. */
export const COPY_PAGE_CELLS = 10_000_000;
/** @defaultValue of `CopyOptions.maxPageRows`. */
export const COPY_PAGE_MAX_ROWS = 20_000;

/** A column a copy fills, as `copyFilling` takes it. */
export type FillColumn = Pick<ColumnPlan, 'columnName' | 'apiName' | 'sqlType'>;

/** One page of a copy, as `CopyOptions.onPage` hears of it (inside the transaction: nothing is committed yet). */
export interface CopyPage {
  source: string;
  /** Rows the page copied; `written` of them held a value for one of the filled columns. */
  rows: number;
  written: number;
  /** The page size in rows: `pageCells` ÷ the copy's columns, within 1 … `maxPageRows`. */
  pageRows: number;
  /** The id range the page covered: ids greater than `after` (null: from the first), up to `through`. */
  after: string | null;
  through: string;
}

export interface CopyOptions {
  /**
   * Cells (rows × the copy's columns) one page takes: its rows' `_properties` are in JS at once, and a row holds at
   * most a value per column. @defaultValue COPY_PAGE_CELLS
   */
  pageCells?: number;
  /** The most rows one page takes, however few the columns. @defaultValue COPY_PAGE_MAX_ROWS */
  maxPageRows?: number;
  /** Called after each page is copied; a throw fails the copy, and the caller's transaction rolls it all back. */
  onPage?: (page: CopyPage) => void | Promise<void>;
}

export interface CopyResult {
  rows: number;
  pages: number;
  /** The columns filled: those added, and any of `source`'s still awaiting a fill (now unmarked). */
  filled: readonly string[];
}

/**
 * Copy every row of `source` into `target`, inside the caller's transaction: the `copied` columns as they are, and
 * the `added` ones (absent from `source`) filled from `_properties` (`fillLines`), page by page in id order so JS
 * holds one page. Columns of `source` still awaiting a fill by page are filled here too, for every row, and
 * unmarked: the copy leaves nothing to resume. Fails, before the caller drops anything, if `target` does not end
 * with as many rows as `source`.
 */
export async function copyFilling(
  connection: DuckDBConnection,
  source: string,
  target: string,
  copied: readonly string[],
  added: readonly FillColumn[],
  options: CopyOptions = {},
): Promise<CopyResult> {
  const copiedNames = new Set(copied.map((c) => c.toLowerCase()));
  const unfinished = (await pendingColumns(connection, source)).filter((c) => copiedNames.has(c.columnName.toLowerCase()));
  const refilled = new Set(unfinished.map((c) => c.columnName.toLowerCase()));
  const fill: FillColumn[] = [...added, ...unfinished];
  const asIs = copied.filter((c) => !refilled.has(c.toLowerCase()));
  const pageCells = options.pageCells ?? COPY_PAGE_CELLS;
  const maxPageRows = options.maxPageRows ?? COPY_PAGE_MAX_ROWS;
  const pageRows = Math.max(1, Math.min(maxPageRows, Math.floor(pageCells / (asIs.length + fill.length))));
  const from = quoteIdentifier(source);
  const stageTypes = fill.map((c) => ({ apiName: c.apiName, sqlType: c.sqlType as SqlType }));
  const stage: StageColumn[] = [
    { name: 'id', sqlType: 'VARCHAR' },
    ...stageTypes.map((c, i) => ({ name: ndjsonKey(i + 1), sqlType: c.sqlType })),
  ];
  const into = quoteIdentifier(target);
  const asIsList = asIs.map(quoteIdentifier).join(', ');
  const fillList = fill.map((c) => quoteIdentifier(c.columnName)).join(', ');
  const asIsValues = asIs.map((c) => `t.${quoteIdentifier(c)}`).join(', ');
  const fillValues = fill.map((_, i) => `s.${quoteIdentifier(ndjsonKey(i + 1))}`).join(', ');
  const result: CopyResult = { rows: 0, pages: 0, filled: fill.map((c) => c.columnName) };
  let after: string | null = null;
  for (;;) {
    // The first page has no lower bound: an id of '' is a row like any other.
    const range = after === null ? 't.id <= $1' : 't.id <= $1 AND t.id > $2';
    const reader = await connection.runAndReadAll(
      `SELECT id, CAST(_properties AS VARCHAR) AS props FROM ${from} AS t
       ${after === null ? '' : 'WHERE t.id > $1'} ORDER BY id LIMIT ${pageRows}`,
      after === null ? [] : [after],
    );
    const page = reader.getRows();
    if (page.length === 0) break;
    const through = String(page[page.length - 1]![0]);
    const bounds = after === null ? [through] : [through, after];
    const lines = fillLines(page, stageTypes);
    // The filled columns of rows without a line (no value for any of them) stay NULL, as they would be written.
    if (lines.rows === 0) {
      await connection.run(`INSERT INTO ${into} (${asIsList}) SELECT ${asIsValues} FROM ${from} AS t WHERE ${range}`, bounds);
    } else {
      await withNdjsonSource(stage, lines, (staged) =>
        connection.run(
          `INSERT INTO ${into} (${asIsList}, ${fillList}) SELECT ${asIsValues}, ${fillValues}
           FROM ${from} AS t LEFT JOIN ${staged} AS s ON t.id = s.${quoteIdentifier(ndjsonKey(0))} WHERE ${range}`,
          bounds,
        ),
      );
    }
    result.pages += 1;
    result.rows += page.length;
    await options.onPage?.({ source, rows: page.length, written: lines.rows, pageRows, after, through });
    if (page.length < pageRows) break;
    after = through;
  }
  const counts = await connection.runAndReadAll(
    `SELECT (SELECT count(*) FROM ${from})::BIGINT AS stored, (SELECT count(*) FROM ${into})::BIGINT AS copies`,
  );
  const { stored, copies } = counts.getRowObjects()[0]!;
  if (stored !== copies) {
    // Two stored rows with one id (never written so) would each meet both staged lines: stop before anything is lost.
    throw new SalesyncError(
      'warehouse_copy_mismatch',
      `Copying ${source} to add columns gave ${String(copies)} rows for ${String(stored)} stored; nothing was changed. ` +
        `Look for ids stored twice: SELECT id FROM ${from} GROUP BY id HAVING count(*) > 1.`,
      { context: { table: source, stored: Number(stored), copies: Number(copies) } },
    );
  }
  if (unfinished.length > 0) {
    await connection.run(
      `DELETE FROM ${quoteIdentifier(COLUMN_FILLS_TABLE)} WHERE table_name = $1 AND column_name IN (SELECT unnest(CAST($2 AS VARCHAR[])))`,
      [source, listOf(unfinished.map((c) => c.columnName))],
    );
    await dropMarkerIfEmpty(connection);
  }
  return result;
}
