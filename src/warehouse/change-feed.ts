/**
 * Reading the change feed (the `changes` view, `history-views.ts`): the versions committed after a cursor (a
 * `change_seq`) or at or after a time, in commit order, and the cursor to pass next time. One read transaction, so
 * the next cursor covers exactly what this read could see: a change committed later has a larger `change_seq`.
 */
import { chmod, rename, rm, writeFile } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import { ConfigError } from '../core/errors.js';
import { RECORD_RESOURCE_NAMES, resourceDescriptor } from '../core/resources.js';
import { historyTableName } from './history-names.js';
import { CHANGES_VIEW, newestChangeSql, scopedChangesSql, type FeedResource } from './history-views.js';
import { quoteLiteral } from './identifiers.js';
import type { ChangeFeed, ChangeQuery, ChangeRow, ChangeSince } from './types.js';
import { rowToJsonFriendly } from './values.js';

const FEED_COLUMNS =
  'change_seq, resource, id, kind, changed_at, committed_at, source, run_id, old_properties, new_properties, changed_properties';

/**
 * The feed's SELECT over `resources`' histories: the `changes` view's rows, read for the versions asked for only
 * (`scopedChangesSql`). Every value in it is validated (a bigint, a canonical instant, known resource names) and quoted.
 */
function feedSql(query: ChangeQuery, resources: readonly FeedResource[], columns: string): string {
  const since =
    'cursor' in query.since
      ? `change_seq > ${query.since.cursor.toString()}`
      : `observed_at >= CAST(${quoteLiteral(query.since.time)} AS TIMESTAMPTZ)`;
  const only = query.resources.length === 0 ? '' : ` AND resource IN (${query.resources.map(quoteLiteral).join(', ')})`;
  return `SELECT ${columns} FROM (${scopedChangesSql(resources, since + only)}) ORDER BY change_seq`;
}

/** The resources whose history the feed reads: those with a history view (the `changes` view's, when it exists). */
async function feedResources(connection: DuckDBConnection): Promise<FeedResource[]> {
  const all = RECORD_RESOURCE_NAMES.map((resource) => ({ resource, table: resourceDescriptor(resource).table }));
  const reader = await connection.runAndReadAll(
    `SELECT view_name FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main'`,
  );
  const views = new Set(reader.getRows().map(([name]) => String(name)));
  return views.has(CHANGES_VIEW) ? all.filter((r) => views.has(historyTableName(r.table))) : [];
}

/**
 * The next cursor: the largest `change_seq` this read can see, or the one given when nothing is there. A cursor past
 * every change is refused: it came from another warehouse, or from this one before it was rebuilt or restored, and
 * polling on with it would read nothing for ever.
 */
async function nextCursor(connection: DuckDBConnection, since: ChangeSince, resources: readonly FeedResource[]): Promise<string> {
  const given = 'cursor' in since ? since.cursor : 0n;
  if (resources.length === 0) return given.toString();
  const reader = await connection.runAndReadAll(newestChangeSql(resources));
  const seen = reader.getRowObjects()[0]?.m;
  const latest = seen === null || seen === undefined ? 0n : BigInt(String(seen));
  if (given > latest) {
    throw new ConfigError(
      'invalid_since',
      `--since ${given} is past the newest change in this warehouse (${latest}): the cursor came from another warehouse, or this one was ` +
        'rebuilt or restored; read again from 0 (or from a time)',
      { option: '--since' },
    );
  }
  return latest.toString();
}

/** Read the changes `query` asks for, and the next cursor, in one read transaction. */
export async function readChanges(connection: DuckDBConnection, query: ChangeQuery): Promise<ChangeFeed> {
  await connection.run('BEGIN TRANSACTION');
  try {
    const resources = await feedResources(connection);
    const feed = resources.length > 0;
    const changes = feed
      ? (await connection.runAndReadAll(feedSql(query, resources, FEED_COLUMNS))).getRowObjects().map((row) => {
          const friendly = rowToJsonFriendly(row);
          // A decimal string whatever its size: cursors are compared as numbers, never as JS floats.
          friendly.change_seq = String(row.change_seq);
          for (const key of ['old_properties', 'new_properties'] as const) {
            const text = friendly[key];
            friendly[key] = typeof text === 'string' ? (JSON.parse(text) as unknown) : null;
          }
          return friendly as unknown as ChangeRow;
        })
      : [];
    return { changes, cursor: await nextCursor(connection, query.since, resources), available: feed };
  } finally {
    await connection.run('ROLLBACK');
  }
}

/**
 * Write the changes `query` asks for to a Parquet file (owner-only, written beside and renamed), and return how many
 * and the next cursor, from one read transaction.
 */
export async function writeChangesParquet(
  connection: DuckDBConnection,
  query: ChangeQuery,
  file: string,
): Promise<{ rows: number; cursor: string; available: boolean }> {
  const partial = `${file}.partial`;
  await connection.run('BEGIN TRANSACTION');
  try {
    const resources = await feedResources(connection);
    const feed = resources.length > 0;
    await rm(partial, { force: true });
    await writeFile(partial, '', { mode: 0o600 });
    // Without the view (a warehouse no sync has written yet), an empty file.
    const select = feed
      ? feedSql(query, resources, FEED_COLUMNS)
      : `SELECT NULL::BIGINT AS change_seq, NULL::VARCHAR AS resource, NULL::VARCHAR AS id, NULL::VARCHAR AS kind WHERE false`;
    const result = await connection.run(`COPY (${select}) TO $1 (FORMAT parquet, USE_TMP_FILE false)`, [partial]);
    await chmod(partial, 0o600);
    await rename(partial, file);
    return { rows: Number(result.rowsChanged), cursor: await nextCursor(connection, query.since, resources), available: feed };
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  } finally {
    await connection.run('ROLLBACK');
  }
}
