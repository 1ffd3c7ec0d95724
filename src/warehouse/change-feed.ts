/**
 * Reading the change feed (the `changes` view, `history-views.ts`): the versions committed after a cursor (a
 * `change_seq`) or at or after a time, in commit order, and the cursor to pass next time. One read transaction, so
 * the next cursor covers exactly what this read could see: a change committed later has a larger `change_seq`.
 */
import { chmod, rename, rm, writeFile } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import { ConfigError } from '../core/errors.js';
import { CHANGES_VIEW } from './history-views.js';
import { quoteIdentifier, quoteLiteral } from './identifiers.js';
import type { ChangeFeed, ChangeQuery, ChangeRow, ChangeSince } from './types.js';
import { rowToJsonFriendly } from './values.js';

const FEED_COLUMNS =
  'change_seq, resource, id, kind, changed_at, committed_at, source, run_id, old_properties, new_properties, changed_properties';

/** The feed's SELECT. Every value in it is validated (a bigint, a canonical instant, known resource names) and quoted. */
function feedSql(query: ChangeQuery, columns: string): string {
  const where =
    'cursor' in query.since
      ? `change_seq > ${query.since.cursor.toString()}`
      : `committed_at >= CAST(${quoteLiteral(query.since.time)} AS TIMESTAMPTZ)`;
  const resources = query.resources.length === 0 ? '' : ` AND resource IN (${query.resources.map(quoteLiteral).join(', ')})`;
  return `SELECT ${columns} FROM ${quoteIdentifier(CHANGES_VIEW)} WHERE ${where}${resources} ORDER BY change_seq`;
}

async function hasFeed(connection: DuckDBConnection): Promise<boolean> {
  const reader = await connection.runAndReadAll(
    `SELECT count(*)::INTEGER AS n FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main' AND view_name = $1`,
    [CHANGES_VIEW],
  );
  return Number(reader.getRowObjects()[0]?.n ?? 0) > 0;
}

/**
 * The next cursor: the largest `change_seq` this read can see, or the one given when nothing is there. A cursor past
 * every change is refused: it came from another warehouse, or from this one before it was rebuilt or restored, and
 * polling on with it would read nothing for ever.
 */
async function nextCursor(connection: DuckDBConnection, since: ChangeSince, feed: boolean): Promise<string> {
  const given = 'cursor' in since ? since.cursor : 0n;
  if (!feed) return given.toString();
  const reader = await connection.runAndReadAll(`SELECT CAST(max(change_seq) AS VARCHAR) AS m FROM ${quoteIdentifier(CHANGES_VIEW)}`);
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
    const feed = await hasFeed(connection);
    const changes = feed
      ? (await connection.runAndReadAll(feedSql(query, FEED_COLUMNS))).getRowObjects().map((row) => {
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
    return { changes, cursor: await nextCursor(connection, query.since, feed), available: feed };
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
    const feed = await hasFeed(connection);
    await rm(partial, { force: true });
    await writeFile(partial, '', { mode: 0o600 });
    // Without the view (a warehouse no sync has written yet), an empty file.
    const select = feed
      ? feedSql(query, FEED_COLUMNS)
      : `SELECT NULL::BIGINT AS change_seq, NULL::VARCHAR AS resource, NULL::VARCHAR AS id, NULL::VARCHAR AS kind WHERE false`;
    const result = await connection.run(`COPY (${select}) TO $1 (FORMAT parquet, USE_TMP_FILE false)`, [partial]);
    await chmod(partial, 0o600);
    await rename(partial, file);
    return { rows: Number(result.rowsChanged), cursor: await nextCursor(connection, query.since, feed), available: feed };
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  } finally {
    await connection.run('ROLLBACK');
  }
}
