/**
 * The property policy in the warehouse: which policy each resource's stored data was written under
 * (`property_policy`), purging properties a new policy no longer allows as they are stored, and compacting the
 * file afterwards, since DuckDB keeps deleted and overwritten data in free blocks until they are reused.
 */
import { randomBytes } from 'node:crypto';
import { chmod, open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { DuckDBInstance, listValue, type DuckDBConnection } from '@duckdb/node-api';
import type { AppliedPolicy, ResourcePolicy } from '../core/property-policy.js';
import type { RecordResourceName } from '../core/resources.js';
import { historyStoreName } from './history-names.js';
import type { StoredPropertyPolicy } from './types.js';
import { quoteIdentifier, quoteLiteral, SYSTEM_COLUMNS } from './identifiers.js';
import { tableColumns } from './catalog.js';
import { forgetWatermark } from './state.js';
import { spillDirectory } from './spill-directory.js';

/** Kept outside the fixed schema files: a warehouse gets it with its first policy. */
export async function ensurePolicyTable(connection: DuckDBConnection): Promise<void> {
  await connection.run(
    `CREATE TABLE IF NOT EXISTS property_policy (
       resource VARCHAR PRIMARY KEY, policy JSON NOT NULL, key_id VARCHAR, fingerprint VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)`,
  );
}

export async function readStoredPolicy(connection: DuckDBConnection, resource: RecordResourceName): Promise<StoredPropertyPolicy | null> {
  if ((await tableColumns(connection, 'property_policy')) === null) return null;
  const reader = await connection.runAndReadAll(
    `SELECT CAST(policy AS VARCHAR) AS policy, key_id, fingerprint FROM property_policy WHERE resource = $1`,
    [resource],
  );
  const row = reader.getRowObjects()[0];
  if (!row) return null;
  return {
    policy: JSON.parse(String(row.policy)) as ResourcePolicy,
    keyId: row.key_id === null ? null : String(row.key_id),
    fingerprint: String(row.fingerprint),
  };
}

/** The properties stored for a resource: its definitions (with `is_core`) and any other key of stored JSON. */
export async function storedProperties(
  connection: DuckDBConnection,
  resource: RecordResourceName,
  table: string,
): Promise<{ apiName: string; isCore: boolean | undefined }[]> {
  const found = new Map<string, boolean | undefined>();
  const definitions = await connection.runAndReadAll(`SELECT api_name, is_core FROM property_definitions WHERE resource = $1`, [resource]);
  for (const row of definitions.getRowObjects()) found.set(String(row.api_name), row.is_core === null ? undefined : row.is_core === true);
  const sources: [string, string][] = [
    [table, '_properties'],
    [historyStoreName(table), 'properties'],
  ];
  for (const [relation, column] of sources) {
    if ((await tableColumns(connection, relation)) === null) continue;
    const keys = await connection.runAndReadAll(
      `SELECT DISTINCT unnest(json_keys(${column})) AS k FROM ${quoteIdentifier(relation)} WHERE json_type(${column}) = 'OBJECT'`,
    );
    for (const row of keys.getRowObjects()) if (!found.has(String(row.k))) found.set(String(row.k), undefined);
  }
  return [...found].map(([apiName, isCore]) => ({ apiName, isCore }));
}

/** SQL of a JSON object without the keys of list parameter `$1` (DuckDB has no json_remove). */
function withoutKeys(column: string): string {
  return `to_json(map_from_entries(list_filter(map_entries(CAST(${column} AS MAP(VARCHAR, JSON))), e -> NOT list_contains(CAST($1 AS VARCHAR[]), e.key))))`;
}

/**
 * Remove `apiNames` from everything the warehouse holds of `resource`, in the caller's transaction: their columns
 * (the current one and any kept after a type change) are dropped, their definitions, options and type changes
 * deleted, their keys stripped from `_properties` and from history's `properties`, and the resource's quarantine
 * emptied (the next walk puts back, policy-applied, what is still broken). Returns the columns dropped.
 */
export async function purgeProperties(
  connection: DuckDBConnection,
  resource: RecordResourceName,
  table: string,
  apiNames: readonly string[],
): Promise<string[]> {
  if (apiNames.length === 0) return [];
  const names = listValue([...apiNames]);
  const dropped: string[] = [];
  const columns = await tableColumns(connection, table);
  if (columns !== null) {
    const reader = await connection.runAndReadAll(
      `SELECT column_name AS c FROM property_definitions WHERE resource = $1 AND list_contains(CAST($2 AS VARCHAR[]), api_name)
       UNION SELECT old_column FROM property_type_changes WHERE resource = $1 AND list_contains(CAST($2 AS VARCHAR[]), api_name)
       UNION SELECT new_column FROM property_type_changes WHERE resource = $1 AND list_contains(CAST($2 AS VARCHAR[]), api_name)`,
      [resource, names],
    );
    const wanted = new Set(reader.getRowObjects().map((r) => String(r.c).toLowerCase()));
    const system = new Set<string>(SYSTEM_COLUMNS);
    for (const column of columns) {
      if (!wanted.has(column.toLowerCase()) || system.has(column)) continue;
      await connection.run(`ALTER TABLE ${quoteIdentifier(table)} DROP COLUMN ${quoteIdentifier(column)}`);
      dropped.push(column);
    }
    // A stripped row's content hash no longer says what it holds: without one, the next write of it compares its
    // properties as text (a row from before content hashes), so the walk after a purge versions no unchanged record.
    await connection.run(
      `UPDATE ${quoteIdentifier(table)} SET _properties = ${withoutKeys('_properties')},
         _content_hash = CASE WHEN list_has_any(json_keys(_properties), CAST($1 AS VARCHAR[])) THEN NULL ELSE _content_hash END
       WHERE json_type(_properties) = 'OBJECT'`,
      [names],
    );
  }
  const history = historyStoreName(table);
  if ((await tableColumns(connection, history)) !== null) {
    await connection.run(
      `UPDATE ${quoteIdentifier(history)} SET properties = ${withoutKeys('properties')} WHERE json_type(properties) = 'OBJECT'`,
      [names],
    );
  }
  for (const fixed of ['property_definitions', 'property_options', 'property_type_changes']) {
    await connection.run(`DELETE FROM ${fixed} WHERE resource = $1 AND list_contains(CAST($2 AS VARCHAR[]), api_name)`, [resource, names]);
  }
  await connection.run(`DELETE FROM rejected_records WHERE resource = $1`, [resource]);
  return dropped;
}

/** The next walk of `resource` is a full one (its checkpoint and watermark forgotten), and the policy is recorded. */
export async function recordPolicy(
  connection: DuckDBConnection,
  resource: RecordResourceName,
  applied: AppliedPolicy,
  now: string,
): Promise<void> {
  await ensurePolicyTable(connection);
  await forgetWatermark(connection, resource, now);
  await connection.run(
    `INSERT INTO property_policy (resource, policy, key_id, fingerprint, applied_at) VALUES ($1, CAST($2 AS JSON), $3, $4, CAST($5 AS TIMESTAMPTZ))
     ON CONFLICT (resource) DO UPDATE SET policy = excluded.policy, key_id = excluded.key_id, fingerprint = excluded.fingerprint, applied_at = excluded.applied_at`,
    [resource, JSON.stringify(applied.policy), applied.keyId, applied.fingerprint, now],
  );
}

/**
 * Rewrite the closed DuckDB file at `path` into a fresh one (`COPY FROM DATABASE`: live data only, no free
 * blocks), then rename it over `path` and remove any WAL. The caller holds no connection to the file.
 */
export async function compactFile(path: string): Promise<{ before: number; after: number }> {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.compact`);
  const instance = await DuckDBInstance.create(':memory:', { temp_directory: spillDirectory(path) });
  const sizeOf = async (p: string) => (await stat(p)).size;
  const before = await sizeOf(path);
  try {
    const connection = await instance.connect();
    try {
      // Read-write: a WAL left beside the file is replayed into what is copied.
      await connection.run(`ATTACH ${quoteLiteral(path)} AS salesync_source`);
      await connection.run(`ATTACH ${quoteLiteral(temporary)} AS salesync_compact`);
      await connection.run('COPY FROM DATABASE salesync_source TO salesync_compact');
      await connection.run('DETACH salesync_compact');
      await connection.run('DETACH salesync_source');
    } finally {
      connection.closeSync();
    }
  } catch (error) {
    await rm(temporary, { force: true });
    await rm(`${temporary}.wal`, { force: true });
    throw error;
  } finally {
    instance.closeSync();
  }
  await chmod(temporary, 0o600);
  const handle = await open(temporary, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rm(`${temporary}.wal`, { force: true });
  await rename(temporary, path);
  await rm(`${path}.wal`, { force: true });
  return { before, after: await sizeOf(path) };
}
