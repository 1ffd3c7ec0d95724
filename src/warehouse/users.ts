/** users: replaced by each complete listing; users no longer listed are marked, never deleted. */
import { LIST, listValue, VARCHAR, type DuckDBConnection } from '@duckdb/node-api';
import type { ServiceUser } from '../core/types.js';
import { canonicalInstant } from '../core/time.js';
import { stageRows } from './staging.js';
import { quoteIdentifier } from './identifiers.js';
import type { StageColumn } from './rows.js';

const USER_STAGE = '_salesync_users';

const USER_COLUMNS: readonly StageColumn[] = [
  { name: 'id', sqlType: 'VARCHAR' },
  { name: 'email', sqlType: 'VARCHAR' },
  { name: 'name', sqlType: 'VARCHAR' },
  { name: 'is_active', sqlType: 'BOOLEAN' },
  { name: '_synced_at', sqlType: 'TIMESTAMPTZ' },
  { name: '_deleted_at', sqlType: 'TIMESTAMPTZ' },
];

/**
 * Upsert the listing (last duplicate wins); mark absent users deleted at `completedAt`, except `listedIds`: users
 * the listing held but that could not be written (rejected: they exist, just invalid); with `listedIds` null, none
 * (a rejected user the listing cannot name could be any of them). Users written leave quarantine. Returns users
 * written.
 */
export async function writeUsers(
  connection: DuckDBConnection,
  users: readonly ServiceUser[],
  completedAt: string,
  syncedAt: string,
  listedIds: readonly string[] | null = [],
): Promise<number> {
  const unique = [...new Map(users.map((u) => [u.id, u])).values()];
  const synced = canonicalInstant(syncedAt);
  await stageRows(
    connection,
    USER_STAGE,
    USER_COLUMNS,
    unique.map((u) => ({ id: u.id, email: u.email, name: u.name, is_active: u.is_active, _synced_at: synced, _deleted_at: null })),
  );
  await connection.run(`INSERT OR REPLACE INTO users BY NAME SELECT * FROM ${quoteIdentifier(USER_STAGE)}`);
  // Keep the first time a user went missing: a later listing must not move it.
  if (listedIds !== null) {
    await connection.run(
      `UPDATE users SET _deleted_at = CAST($1 AS TIMESTAMPTZ)
       WHERE _deleted_at IS NULL AND id NOT IN (SELECT id FROM ${quoteIdentifier(USER_STAGE)})
         AND id NOT IN (SELECT unnest(CAST($2 AS VARCHAR[])))`,
      [canonicalInstant(completedAt) ?? synced, listValue([...listedIds])],
      // Typed: an empty list has no item type to infer.
      [VARCHAR, LIST(VARCHAR)],
    );
  }
  await connection.run(`DELETE FROM rejected_records WHERE resource = 'users' AND id IN (SELECT id FROM ${quoteIdentifier(USER_STAGE)})`);
  await connection.run(`DROP TABLE ${quoteIdentifier(USER_STAGE)}`);
  return unique.length;
}

/** Users stored and not marked deleted: whom a complete listing that leaves them out may have lost. */
export async function liveUserIds(connection: DuckDBConnection): Promise<string[]> {
  const reader = await connection.runAndReadAll(`SELECT id FROM users WHERE _deleted_at IS NULL ORDER BY id`);
  return reader.getRows().map(([id]) => String(id));
}
