/**
 * `<table>_history`: the history of the mirror (SCD type 2). A version is appended whenever a commit changes what
 * the live row says (a new record, a different content hash, a deletion, a restore), in the same transaction as
 * the live write, so the current version always equals the live row, after a crash too (both commit or neither).
 * Versions are ordered by `change_seq` (commit order, from one sequence for every table), never by `updated_at`:
 * the service's clocks can lie. A late page whose older version is not written to the live row is no version.
 *
 * The versions are stored in `<table>_history_store`; `<table>_history` is a view of it. A current version's
 * properties are the live row's (`_properties`), so the store holds them only once the version closes: a first
 * load writes each record's properties once, not twice (the JSON was most of what a commit compressed).
 */
import { listValue, type DuckDBConnection } from '@duckdb/node-api';
import { historyStoreName, historyTableName } from './history-names.js';
import { quoteIdentifier, quoteLiteral } from './identifiers.js';

/** What produced a version. `migrated`: carried over from a warehouse written before history was SCD2. */
export type VersionSource = 'incremental' | 'backfill' | 'reconcile' | 'deleted' | 'restored' | 'migrated';

/** The sequence every history table takes `change_seq` from (schema/warehouse-fixed-tables.sql). */
export const CHANGE_SEQUENCE = 'history_change_seq';

const HISTORY_COLUMNS = `(
  id VARCHAR NOT NULL,
  created_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ,
  properties JSON,
  valid_from TIMESTAMPTZ NOT NULL,
  valid_to TIMESTAMPTZ,
  is_current BOOLEAN NOT NULL,
  valid_from_basis VARCHAR NOT NULL,
  source VARCHAR NOT NULL,
  run_id VARCHAR,
  observed_at TIMESTAMPTZ NOT NULL,
  change_seq BIGINT NOT NULL,
  deleted BOOLEAN NOT NULL)`;

const INSERT_COLUMNS =
  'id, created_at, updated_at, properties, valid_from, valid_to, is_current, valid_from_basis, source, run_id, observed_at, change_seq, deleted';

/**
 * The history view: closed versions as stored, current ones with the live row's properties. Two branches rather
 * than one join: only current versions need the live table.
 */
function historyViewSql(table: string): string {
  const columns = (properties: string) =>
    `h.id, h.created_at, h.updated_at, ${properties} AS properties, h.valid_from, h.valid_to, h.is_current, h.valid_from_basis, h.source, h.run_id, h.observed_at, h.change_seq, h.deleted`;
  const store = quoteIdentifier(historyStoreName(table));
  return `CREATE OR REPLACE VIEW ${quoteIdentifier(historyTableName(table))} AS
    SELECT ${columns('h.properties')} FROM ${store} AS h WHERE NOT h.is_current
    UNION ALL
    SELECT ${columns('t._properties')} FROM ${store} AS h JOIN ${quoteIdentifier(table)} AS t ON t.id = h.id WHERE h.is_current`;
}

async function relationKind(connection: DuckDBConnection, name: string): Promise<'table' | 'view' | null> {
  const reader = await connection.runAndReadAll(
    `SELECT 'table' AS kind FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1
     UNION ALL
     SELECT 'view' FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main' AND view_name = $1`,
    [name],
  );
  const kind = reader.getRowObjects()[0]?.kind;
  return kind === 'table' || kind === 'view' ? kind : null;
}

async function columnsOf(connection: DuckDBConnection, table: string): Promise<Set<string> | null> {
  const reader = await connection.runAndReadAll(
    `SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1`,
    [table],
  );
  const names = reader.getRowObjects().map((r) => String(r.column_name));
  return names.length === 0 ? null : new Set(names);
}

/**
 * The valid_from of a version that follows one valid from `previous`: the record's `updated_at` when it moved past
 * it (basis `updated_at`), else when the change was observed, kept after `previous` so versions never overlap
 * (basis `observed`). SQL expressions over the given ones.
 */
function validFromSql(updatedAt: string, previous: string, observed: string): { validFrom: string; basis: string } {
  const moved = `(${updatedAt} IS NOT NULL AND (${previous} IS NULL OR ${updatedAt} > ${previous}))`;
  return {
    validFrom: `CASE WHEN ${moved} THEN ${updatedAt} ELSE greatest(${observed}, ${previous} + INTERVAL 1 MICROSECOND) END`,
    basis: `CASE WHEN ${moved} THEN 'updated_at' ELSE 'observed' END`,
  };
}

/**
 * Create the history (store and view) when missing, or migrate one of an earlier release without losing a row: an
 * SCD2 table becomes the store; one of the first release (one row per (id, updated_at) observed, no validity) is
 * rebuilt per id in `updated_at` order, each valid until the next, the last current. Then a version wherever the
 * live row differs from its current one (a silent change, a deletion), and current versions' stored copies of the
 * properties are dropped (the view reads the live row's). A warehouse with rows and no history starts it from them.
 */
export async function ensureHistoryTable(connection: DuckDBConnection, table: string): Promise<void> {
  const view = historyTableName(table);
  const store = historyStoreName(table);
  if ((await columnsOf(connection, store)) !== null) {
    if ((await relationKind(connection, view)) !== 'view') await connection.run(historyViewSql(table));
    return;
  }
  const target = quoteIdentifier(store);
  const kind = await relationKind(connection, view);
  const columns = kind === 'table' ? await columnsOf(connection, view) : null;
  if (columns?.has('change_seq')) {
    await connection.run(`ALTER TABLE ${quoteIdentifier(view)} RENAME TO ${target}`);
  } else if (columns === null) {
    if (kind === 'view') await connection.run(`DROP VIEW ${quoteIdentifier(view)}`);
    await connection.run(`CREATE TABLE ${target} ${HISTORY_COLUMNS}`);
  } else {
    const old = quoteIdentifier(`${view}__v1`);
    await connection.run(`ALTER TABLE ${quoteIdentifier(view)} RENAME TO ${old}`);
    await connection.run(`CREATE TABLE ${target} ${HISTORY_COLUMNS}`);
    const count = await connection.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM ${old}`);
    const n = Number(count.getRowObjects()[0]?.n ?? 0);
    if (n > 0) {
      // Commit order of old versions is unknown: a block of the sequence, handed out by when each was observed, but
      // an id's versions in updated_at order (a late page observed after a newer version sorts before it).
      const live = (await columnsOf(connection, table)) !== null;
      const taken = await connection.runAndReadAll(
        `SELECT max(nextval(${quoteLiteral(CHANGE_SEQUENCE)}))::BIGINT AS last FROM range(${n})`,
      );
      const first = BigInt(taken.getRowObjects()[0]!.last as bigint) - BigInt(n) + 1n;
      await connection.run(
        `INSERT INTO ${target} (${INSERT_COLUMNS})
         SELECT id, created_at, updated_at, properties, updated_at, valid_to, valid_to IS NULL,
                'updated_at', 'migrated', NULL, coalesce(observed_at, updated_at),
                ${first} - 1 + row_number() OVER (ORDER BY seen NULLS FIRST, updated_at, id), false
         FROM (SELECT o.*, ${live ? 't.created_at' : 'CAST(NULL AS TIMESTAMPTZ) AS created_at'},
                      lead(o.updated_at) OVER w AS valid_to, max(o.observed_at) OVER (w ROWS UNBOUNDED PRECEDING) AS seen
               FROM ${old} AS o${live ? ` LEFT JOIN ${quoteIdentifier(table)} AS t ON t.id = o.id` : ''}
               WINDOW w AS (PARTITION BY o.id ORDER BY o.updated_at))`,
      );
    }
    await connection.run(`DROP TABLE ${old}`);
  }
  if ((await columnsOf(connection, table)) !== null) {
    await connection.run(historyViewSql(table));
    await appendDriftVersions(connection, table);
    // A NULL is a validity bit: cheap to write, unlike the JSON an UPDATE would otherwise hold until a checkpoint.
    await connection.run(`UPDATE ${target} SET properties = NULL WHERE is_current AND properties IS NOT NULL`);
  }
}

/**
 * Append a version for every live row its current version does not equal (stored properties, timestamps,
 * deleted), so the invariant holds: a migrated history, or rows that had none. A deleted row gets a deleted
 * version. The closed version keeps what it stored, else the live row's properties (the best known).
 */
async function appendDriftVersions(connection: DuckDBConnection, table: string): Promise<void> {
  const target = quoteIdentifier(historyStoreName(table));
  const live = quoteIdentifier(table);
  const drift = quoteIdentifier('_salesync_drift');
  const observed = 'coalesce(t._deleted_at, t._synced_at, now())';
  const { validFrom, basis } = validFromSql('t.updated_at', 'h.valid_from', observed);
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE ${drift} AS
     SELECT t.id, t.created_at, t.updated_at, t._properties AS properties, t._deleted_at IS NOT NULL AS deleted,
            ${validFrom} AS valid_from, ${basis} AS basis, coalesce(t._synced_at, now()) AS observed_at, h._hrowid
     FROM ${live} AS t LEFT JOIN (SELECT rowid AS _hrowid, * FROM ${target} WHERE is_current) AS h ON h.id = t.id
     WHERE h.id IS NULL OR h.deleted <> (t._deleted_at IS NOT NULL) OR h.updated_at IS DISTINCT FROM t.updated_at
        OR (h.properties IS NOT NULL AND CAST(h.properties AS VARCHAR) IS DISTINCT FROM CAST(t._properties AS VARCHAR))`,
  );
  await connection.run(closeVersionsSql(target, drift, 'coalesce(o.properties, c.properties)'));
  await connection.run(`DELETE FROM ${target} WHERE rowid IN (SELECT _hrowid FROM ${drift})`);
  await connection.run(
    `INSERT INTO ${target} (${INSERT_COLUMNS})
     SELECT id, created_at, updated_at, NULL, valid_from, NULL, true, basis,
            CASE WHEN deleted THEN 'deleted' ELSE 'migrated' END, NULL, observed_at, nextval(${quoteLiteral(CHANGE_SEQUENCE)}), deleted
     FROM ${drift}`,
  );
  await connection.run(`DROP TABLE ${drift}`);
}

/**
 * Closing the current versions listed in `closing` (columns `_hrowid`, their rowids in the store, and `valid_from`,
 * of the versions that follow): each is appended again, closed, with `properties` (over `o`, the stored version,
 * and `c`, the listed row); the caller then deletes the open copies by rowid. Appended and deleted rather than
 * updated: an UPDATE of a JSON column is held in memory until the next checkpoint.
 */
function closeVersionsSql(store: string, closing: string, properties: string, join = ''): string {
  return `INSERT INTO ${store} (${INSERT_COLUMNS})
     SELECT o.id, o.created_at, o.updated_at, ${properties}, o.valid_from, c.valid_from, false, o.valid_from_basis, o.source,
            o.run_id, o.observed_at, o.change_seq, o.deleted
     FROM ${closing} AS c JOIN ${store} AS o ON o.rowid = c._hrowid${join}`;
}

/** The stage's columns (quoted) a version takes from a record, and how to tell which staged rows are versions. */
export interface StagedVersion {
  id: string;
  createdAt: string;
  updatedAt: string;
  /** The stage's column holding the stored live row's rowid; absent: the live row is found by id (a full scan). */
  storedRowid?: string;
  /** SQL condition, over the stage, of the rows that are new versions (written, and their content changed). */
  isVersion: string;
  /** SQL condition, over the stage, of rows whose stored row was marked deleted (their version is `restored`). */
  wasDeleted: string;
}

/** What a commit says about the versions it appends. */
export interface VersionContext {
  source: Exclude<VersionSource, 'deleted' | 'restored' | 'migrated'>;
  runId: string | null;
  /** When the commit happened (our clock): `observed_at`. */
  committedAt: string;
  /** When the change was seen, on the service's clock where known: `valid_from` of a change `updated_at` does not date. */
  observedAt: string;
}

const VERSIONS_STAGE = '_salesync_versions';

/**
 * Statements appending the staged rows that are versions (`staged.isVersion`) to history and closing the versions
 * they follow, each closed with the properties of the live row it was (read before the live row is replaced).
 * Run in the transaction that writes the live rows, before those are replaced and before the stage is dropped.
 * The history must exist (`ensureHistoryTable`).
 */
export function recordVersionsSql(
  table: string,
  stage: string,
  staged: StagedVersion,
  context: VersionContext,
  followsStored: boolean,
): string[] {
  const history = quoteIdentifier(historyStoreName(table));
  const from = quoteIdentifier(stage);
  const versions = quoteIdentifier(VERSIONS_STAGE);
  const { id, createdAt, updatedAt } = staged;
  const observed = `CAST(${quoteLiteral(context.observedAt)} AS TIMESTAMPTZ)`;
  // Only a stored row has versions (live rows are never removed): a batch of new ids alone (a first load) neither
  // scans history for the versions they follow nor closes any.
  const { validFrom, basis } = validFromSql(`s.${updatedAt}`, followsStored ? 'h.valid_from' : 'CAST(NULL AS TIMESTAMPTZ)', observed);
  const runId = context.runId === null ? 'NULL' : quoteLiteral(context.runId);
  const committedAt = `CAST(${quoteLiteral(context.committedAt)} AS TIMESTAMPTZ)`;
  const source = `CASE WHEN ${staged.wasDeleted} THEN 'restored' ELSE ${quoteLiteral(context.source)} END`;
  if (!followsStored) {
    // New ids only: each version straight from the stage, in one statement.
    return [
      `INSERT INTO ${history} (${INSERT_COLUMNS})
       SELECT s.${id}, s.${createdAt}, s.${updatedAt}, NULL, ${validFrom}, NULL, true, ${basis}, ${source},
              ${runId}, ${committedAt}, nextval(${quoteLiteral(CHANGE_SEQUENCE)}), false
       FROM ${from} AS s
       WHERE ${staged.isVersion}`,
    ];
  }
  const live = quoteIdentifier(table);
  const liveRow = staged.storedRowid === undefined ? `${live} AS t ON t.id = c.id` : `${live} AS t ON t.rowid = c._live_rowid`;
  return [
    `CREATE OR REPLACE TEMP TABLE ${versions} AS
     SELECT s.${id} AS id, ${validFrom} AS valid_from, ${basis} AS basis, ${source} AS source, h._hrowid,
            ${staged.storedRowid === undefined ? 'NULL' : `s.${staged.storedRowid}`} AS _live_rowid
     FROM ${from} AS s LEFT JOIN (SELECT id, valid_from, rowid AS _hrowid FROM ${history} WHERE is_current) AS h ON h.id = s.${id}
     WHERE ${staged.isVersion}`,
    closeVersionsSql(history, versions, 't._properties', ` JOIN ${liveRow}`),
    `DELETE FROM ${history} WHERE rowid IN (SELECT _hrowid FROM ${versions})`,
    `INSERT INTO ${history} (${INSERT_COLUMNS})
     SELECT s.${id}, s.${createdAt}, s.${updatedAt}, NULL, v.valid_from, NULL, true, v.basis, v.source,
            ${runId}, ${committedAt}, nextval(${quoteLiteral(CHANGE_SEQUENCE)}), false
     FROM ${from} AS s JOIN ${versions} AS v ON v.id = s.${id}`,
    `DROP TABLE ${versions}`,
  ];
}

/**
 * Before live rows `ids` are marked deleted at `deletedAt`: close each one's current version and append a deleted
 * one, so the marked row (which keeps its last content) still equals its current version. Rows already marked are
 * left alone. Runs in the transaction that marks them.
 */
export async function recordDeletions(
  connection: DuckDBConnection,
  table: string,
  ids: readonly string[],
  deletedAt: string,
  runId: string | null,
  committedAt: string,
): Promise<void> {
  if (ids.length === 0) return;
  const history = quoteIdentifier(historyStoreName(table));
  const gone = quoteIdentifier('_salesync_gone');
  const { validFrom, basis } = validFromSql('NULL', 'h.valid_from', 'CAST($2 AS TIMESTAMPTZ)');
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE ${gone} AS
     SELECT t.id, t.created_at, t.updated_at, t._properties AS properties, ${validFrom} AS valid_from, ${basis} AS basis, h._hrowid
     FROM ${quoteIdentifier(table)} AS t LEFT JOIN (SELECT id, valid_from, rowid AS _hrowid FROM ${history} WHERE is_current) AS h ON h.id = t.id
     WHERE t._deleted_at IS NULL AND t.id IN (SELECT unnest(CAST($1 AS VARCHAR[])))`,
    [listValue([...ids]), deletedAt],
  );
  await connection.run(closeVersionsSql(history, gone, 'c.properties'));
  await connection.run(`DELETE FROM ${history} WHERE rowid IN (SELECT _hrowid FROM ${gone})`);
  await connection.run(
    `INSERT INTO ${history} (${INSERT_COLUMNS})
     SELECT id, created_at, updated_at, NULL, valid_from, NULL, true, basis, 'deleted',
            ${runId === null ? 'NULL' : quoteLiteral(runId)}, CAST(${quoteLiteral(committedAt)} AS TIMESTAMPTZ),
            nextval(${quoteLiteral(CHANGE_SEQUENCE)}), true
     FROM ${gone}`,
  );
  await connection.run(`DROP TABLE ${gone}`);
}
