/**
 * `<table>_history`: the history of the mirror (SCD type 2). A version is written whenever a commit changes what
 * the live row says (a new record, a different content hash, a deletion, a restore), in the same transaction as
 * the live write. Versions are ordered by `change_seq` (commit order, from one sequence for every table), never by
 * `updated_at`: the service's clocks can lie. A late page whose older version is not written to the live row is no
 * version.
 *
 * A record's current version is its live row: the row's version columns (`VERSION_COLUMNS`) say which version it
 * is, so the current version equals the live row by construction, and a first load writes no history at all.
 * `<table>_history_store` holds the closed versions only: when a live row is replaced by a new version, the version
 * it was is appended there, closed, with the properties it held. `<table>_history` is the view of both.
 */
import { listValue, type DuckDBConnection } from '@duckdb/node-api';
import { historyStoreName, historyTableName, VERSION_COLUMNS, type VersionColumn } from './history-names.js';
import { quoteIdentifier, quoteLiteral } from './identifiers.js';
import { rebuildTable } from './schema.js';
import { tableColumns } from './catalog.js';

/** What produced a version. `migrated`: carried over from a warehouse written before history was SCD2. */
export type VersionSource = 'incremental' | 'backfill' | 'reconcile' | 'deleted' | 'restored' | 'migrated';

/**
 * The `change_seq` a commit numbers its versions from (1, 2, … above it), and the statement that moves it past
 * `n` of them, run after the versions are written (schema/warehouse-fixed-tables.sql: no row calls nextval).
 */
const CHANGE_SEQ_BASE = '(SELECT last FROM history_change_counter)';
export const takeChangeSeqs = (n: number | string): string => `UPDATE history_change_counter SET last = last + ${n}`;
/** A select-list item reading the counter's value as `seq_base`, for `liveVersionValues`. */
export const CHANGE_SEQ_BASE_COLUMN = `${CHANGE_SEQ_BASE} AS seq_base`;

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
 * Marks a store that holds closed versions only (its table comment): one whose current versions were adopted by
 * their live rows (`adoptCurrentVersions`). A store without it is of an earlier release.
 */
const CLOSED_ONLY = 'salesync:closed-versions';

/** The version columns, quoted, in `VERSION_COLUMNS` order. */
const VERSION_NAMES = VERSION_COLUMNS.map((c) => quoteIdentifier(c.name));

/** SQL of the valid_from of live row `t`'s version, and of its basis (see `VERSION_COLUMNS`). */
const liveValidFrom = (t: string) => `coalesce(${t}._version_from, ${t}.updated_at)`;
const liveBasis = (t: string) => `CASE WHEN ${t}._version_from IS NULL THEN 'updated_at' ELSE 'observed' END`;

/** The columns of a closed version in the store, from live row `t` and the valid_from of the version after it. */
function closedFromLive(t: string, validTo: string): string {
  return `${t}.id, ${t}.created_at, ${t}.updated_at, ${t}._properties, ${liveValidFrom(t)}, ${validTo}, false, ${liveBasis(t)},
          ${t}._version_source, ${t}._version_run_id, ${t}._version_observed_at, ${t}._version_seq, ${t}._deleted_at IS NOT NULL`;
}

/** The history view: closed versions as stored, and each live row as its record's current version. */
function historyViewSql(table: string): string {
  const store = quoteIdentifier(historyStoreName(table));
  return `CREATE OR REPLACE VIEW ${quoteIdentifier(historyTableName(table))} AS
    SELECT ${INSERT_COLUMNS} FROM ${store} WHERE NOT is_current
    UNION ALL
    SELECT t.id, t.created_at, t.updated_at, t._properties AS properties, ${liveValidFrom('t')} AS valid_from,
           CAST(NULL AS TIMESTAMPTZ) AS valid_to, true AS is_current, ${liveBasis('t')} AS valid_from_basis,
           t._version_source AS source, t._version_run_id AS run_id, t._version_observed_at AS observed_at,
           t._version_seq AS change_seq, t._deleted_at IS NOT NULL AS deleted
    FROM ${quoteIdentifier(table)} AS t`;
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

/**
 * The tables among `tables` whose history needs nothing: a closed-only store, and its view when there is a live
 * table. One catalog read for them all: this runs for every table at every listing of definitions.
 */
async function settledHistories(connection: DuckDBConnection, tables: readonly string[]): Promise<Set<string>> {
  const names = tables.flatMap((t) => [t, historyStoreName(t), historyTableName(t)]);
  const reader = await connection.runAndReadAll(
    `SELECT table_name AS name, 'table' AS kind, comment FROM duckdb_tables()
     WHERE database_name = current_database() AND schema_name = 'main' AND list_contains($1, table_name)
     UNION ALL
     SELECT view_name, 'view', NULL FROM duckdb_views()
     WHERE database_name = current_database() AND schema_name = 'main' AND list_contains($1, view_name)`,
    [listValue(names)],
  );
  // Relation name by kind, with its comment.
  const found = new Map(reader.getRowObjects().map((r) => [`${String(r.kind)} ${String(r.name)}`, r.comment]));
  return new Set(
    tables.filter(
      (t) =>
        found.get(`table ${historyStoreName(t)}`) === CLOSED_ONLY && (!found.has(`table ${t}`) || found.has(`view ${historyTableName(t)}`)),
    ),
  );
}

async function columnsOf(connection: DuckDBConnection, table: string): Promise<Set<string> | null> {
  const names = await tableColumns(connection, table);
  return names && new Set(names);
}

async function tableComment(connection: DuckDBConnection, table: string): Promise<string | null> {
  const reader = await connection.runAndReadAll(
    `SELECT comment FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1`,
    [table],
  );
  const comment = reader.getRowObjects()[0]?.comment;
  return comment === null || comment === undefined ? null : String(comment);
}

/**
 * The valid_from of a version that follows one valid from `previous`: the record's `updated_at` when it moved past
 * it (basis `updated_at`), else when the change was observed, kept after `previous` so versions never overlap
 * (basis `observed`). SQL expressions over the given ones: `versionFrom` is what the live row's `_version_from`
 * holds (NULL for basis `updated_at`).
 */
function validFromSql(updatedAt: string, previous: string, observed: string): { validFrom: string; versionFrom: string } {
  const moved = `(${updatedAt} IS NOT NULL AND (${previous} IS NULL OR ${updatedAt} > ${previous}))`;
  const observedFrom = `greatest(${observed}, ${previous} + INTERVAL 1 MICROSECOND)`;
  return {
    validFrom: `CASE WHEN ${moved} THEN ${updatedAt} ELSE ${observedFrom} END`,
    versionFrom: `CASE WHEN ${moved} THEN CAST(NULL AS TIMESTAMPTZ) ELSE ${observedFrom} END`,
  };
}

/**
 * For each of `tables`, create the history (store and view) when missing, or migrate one of an earlier release
 * without losing a row: an SCD2 table becomes the store; one of the first release (one row per (id, updated_at)
 * observed, no validity) is rebuilt per id in `updated_at` order, each valid until the next, the last current. Then
 * the live rows adopt their current versions (`adoptCurrentVersions`). A warehouse with rows and no history starts
 * it from them.
 */
export async function ensureHistoryTables(connection: DuckDBConnection, tables: readonly string[]): Promise<void> {
  const settled = await settledHistories(connection, tables);
  for (const table of tables) if (!settled.has(table)) await ensureHistoryTable(connection, table);
}

async function ensureHistoryTable(connection: DuckDBConnection, table: string): Promise<void> {
  const view = historyTableName(table);
  const store = historyStoreName(table);
  const live = await columnsOf(connection, table);
  if ((await columnsOf(connection, store)) !== null) {
    if ((await tableComment(connection, store)) === CLOSED_ONLY || live === null) {
      if (live !== null && (await relationKind(connection, view)) !== 'view') await connection.run(historyViewSql(table));
      return;
    }
  } else {
    await createStore(connection, table, live !== null);
  }
  if (live === null) return;
  await adoptCurrentVersions(connection, table, live);
  await connection.run(historyViewSql(table));
}

/** The store of `table`, made from an earlier release's history table when there is one (see `ensureHistoryTable`). */
async function createStore(connection: DuckDBConnection, table: string, hasLive: boolean): Promise<void> {
  const view = historyTableName(table);
  const target = quoteIdentifier(historyStoreName(table));
  const kind = await relationKind(connection, view);
  const columns = kind === 'table' ? await columnsOf(connection, view) : null;
  if (columns?.has('change_seq')) {
    await connection.run(`ALTER TABLE ${quoteIdentifier(view)} RENAME TO ${target}`);
    return;
  }
  if (kind === 'view') await connection.run(`DROP VIEW ${quoteIdentifier(view)}`);
  await connection.run(`CREATE TABLE ${target} ${HISTORY_COLUMNS}`);
  if (columns === null) {
    if (!hasLive) await connection.run(`COMMENT ON TABLE ${target} IS '${CLOSED_ONLY}'`);
    return;
  }
  const old = quoteIdentifier(`${view}__v1`);
  await connection.run(`ALTER TABLE ${quoteIdentifier(view)} RENAME TO ${old}`);
  const count = await connection.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM ${old}`);
  const n = Number(count.getRowObjects()[0]?.n ?? 0);
  if (n > 0) {
    // Commit order of old versions is unknown: a block of the sequence, handed out by when each was observed, but
    // an id's versions in updated_at order (a late page observed after a newer version sorts before it).
    const taken = await connection.runAndReadAll(`${takeChangeSeqs(n)} RETURNING last`);
    const first = BigInt(taken.getRowObjects()[0]!.last as bigint) - BigInt(n) + 1n;
    await connection.run(
      `INSERT INTO ${target} (${INSERT_COLUMNS})
       SELECT id, created_at, updated_at, properties, updated_at, valid_to, valid_to IS NULL,
              'updated_at', 'migrated', NULL, coalesce(observed_at, updated_at),
              ${first} - 1 + row_number() OVER (ORDER BY seen NULLS FIRST, updated_at, id), false
       FROM (SELECT o.*, ${hasLive ? 't.created_at' : 'CAST(NULL AS TIMESTAMPTZ) AS created_at'},
                    lead(o.updated_at) OVER w AS valid_to, max(o.observed_at) OVER (w ROWS UNBOUNDED PRECEDING) AS seen
             FROM ${old} AS o${hasLive ? ` LEFT JOIN ${quoteIdentifier(table)} AS t ON t.id = o.id` : ''}
             WINDOW w AS (PARTITION BY o.id ORDER BY o.updated_at))`,
    );
  }
  await connection.run(`DROP TABLE ${old}`);
}

/**
 * Each live row becomes its record's current version: where the store's current version equals it (properties
 * when the store kept them, `updated_at`, deleted), the row takes that version's validity and provenance; else
 * (a silent change, an older version written by a full walk, a row with no history) the store's version is closed
 * with the properties it kept, or the live row's (the best known), and the row becomes a new version (`migrated`,
 * or `deleted` for a row marked deleted). Rows that are versions already keep theirs. The adopted versions leave
 * the store, which is then marked closed-only.
 *
 * The table is rebuilt with the version columns filled (appended, where an UPDATE of every row would be held in
 * memory until a checkpoint), every stored column copied by name.
 */
async function adoptCurrentVersions(connection: DuckDBConnection, table: string, liveColumns: ReadonlySet<string>): Promise<void> {
  const store = quoteIdentifier(historyStoreName(table));
  const live = quoteIdentifier(table);
  const adopt = quoteIdentifier('_salesync_adopt');
  const hasVersions = VERSION_COLUMNS.every((c) => liveColumns.has(c.name));
  const versioned = hasVersions ? 't._version_seq IS NOT NULL' : 'false';
  const same = `h.id IS NOT NULL AND h.deleted = (t._deleted_at IS NOT NULL) AND h.updated_at IS NOT DISTINCT FROM t.updated_at
    AND (h.properties IS NULL OR CAST(h.properties AS VARCHAR) IS NOT DISTINCT FROM CAST(t._properties AS VARCHAR))`;
  const { validFrom, versionFrom } = validFromSql('updated_at', 'h_valid_from', 'coalesce(deleted_at, synced_at, now())');
  // Each row's version columns: its own, the store's current version's, or a new version's.
  const adopted: Record<VersionColumn, [own: string, fresh: string]> = {
    _version_from: [`CASE WHEN h_basis = 'updated_at' THEN CAST(NULL AS TIMESTAMPTZ) ELSE h_valid_from END`, versionFrom],
    _version_source: ['h_source', `CASE WHEN deleted_at IS NOT NULL THEN 'deleted' ELSE 'migrated' END`],
    _version_run_id: ['h_run_id', 'CAST(NULL AS VARCHAR)'],
    _version_observed_at: ['h_observed_at', 'coalesce(synced_at, now())'],
    _version_seq: ['h_seq', `${CHANGE_SEQ_BASE} + row_number() OVER ()`],
  };
  const versionValues = VERSION_COLUMNS.map((c, i) => {
    const [own, fresh] = adopted[c.name];
    return `CASE ${hasVersions ? `WHEN kind = 'versioned' THEN v${i} ` : ''}WHEN kind = 'adopted' THEN ${own} ELSE ${fresh} END AS ${quoteIdentifier(c.name)}`;
  });
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE ${adopt} AS
     SELECT id, _hrowid, h_id, h_created_at, h_updated_at, h_valid_from, h_basis, h_source, h_run_id, h_observed_at, h_seq, h_deleted,
            kind, ${validFrom} AS valid_from, coalesce(h_properties, properties) AS closed_properties, ${versionValues.join(', ')}
     FROM (SELECT t.id, t.updated_at, t._deleted_at AS deleted_at, t._synced_at AS synced_at, t._properties AS properties,
                  ${hasVersions ? `${VERSION_COLUMNS.map((c, i) => `t.${quoteIdentifier(c.name)} AS v${i}`).join(', ')},` : ''}
                  h._hrowid, h.id AS h_id, h.created_at AS h_created_at, h.updated_at AS h_updated_at, h.valid_from AS h_valid_from,
                  h.valid_from_basis AS h_basis, h.source AS h_source, h.run_id AS h_run_id, h.observed_at AS h_observed_at,
                  h.change_seq AS h_seq, h.deleted AS h_deleted, h.properties AS h_properties,
                  CASE WHEN ${versioned} THEN 'versioned' WHEN ${same} THEN 'adopted' ELSE 'new' END AS kind
           FROM ${live} AS t
             LEFT JOIN (SELECT rowid AS _hrowid, * FROM ${store} WHERE is_current
                        QUALIFY row_number() OVER (PARTITION BY id ORDER BY change_seq DESC) = 1) AS h
               ON h.id = t.id AND NOT (${versioned}))`,
  );
  // A version the live row no longer equals closes where the row's new one starts; an adopted one is the row's now.
  await connection.run(
    `INSERT INTO ${store} (${INSERT_COLUMNS})
     SELECT h_id, h_created_at, h_updated_at, closed_properties, h_valid_from, valid_from, false, h_basis,
            h_source, h_run_id, h_observed_at, h_seq, h_deleted
     FROM ${adopt} WHERE kind = 'new' AND h_id IS NOT NULL`,
  );
  await connection.run(`DELETE FROM ${store} WHERE rowid IN (SELECT _hrowid FROM ${adopt} WHERE _hrowid IS NOT NULL)`);
  await connection.run(takeChangeSeqs(`(SELECT count(*) FROM ${adopt})`));
  await rebuildWithVersions(connection, table, adopt);
  await connection.run(`DROP TABLE ${adopt}`);
  await connection.run(`COMMENT ON TABLE ${store} IS '${CLOSED_ONLY}'`);
}

/** `table` rebuilt (`rebuildTable`) with its version columns from `versions` (by id), every other column as stored. */
async function rebuildWithVersions(connection: DuckDBConnection, table: string, versions: string): Promise<void> {
  await rebuildTable(connection, table, [], async (scratch, stored) => {
    const copied = stored.map((c) => quoteIdentifier(c.columnName)).filter((name) => !VERSION_NAMES.includes(name));
    await connection.run(
      `INSERT INTO ${quoteIdentifier(scratch)} (${[...copied, ...VERSION_NAMES].join(', ')})
       SELECT ${[...copied.map((name) => `t.${name}`), ...VERSION_NAMES.map((name) => `v.${name}`)].join(', ')}
       FROM ${quoteIdentifier(table)} AS t JOIN ${versions} AS v ON v.id = t.id`,
    );
  });
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
  /** SQL condition, over the stage, of rows whose id the table stores. */
  stored: string;
  /** The stage's column numbering its rows from 1, unique in the batch: a version's change_seq above the base. */
  position: string;
}

/** What a commit says about the versions it writes. */
export interface VersionContext {
  source: Exclude<VersionSource, 'deleted' | 'restored' | 'migrated'>;
  runId: string | null;
  /** When the commit happened (our clock): `observed_at`. */
  committedAt: string;
  /** When the change was seen, on the service's clock where known: `valid_from` of a change `updated_at` does not date. */
  observedAt: string;
}

/** The stage's column holding the stored row's valid_from, and those holding its version columns (`k` their index). */
const PREVIOUS_FROM = '_stored_from';
const storedVersionKey = (i: number) => `_stored_v${i}`;

/**
 * What a stage takes from the stored row `t` of each id for its versions (name, SQL over `t`, type): the stored
 * version's valid_from, which a new version follows, and its version columns, which a row written unchanged keeps.
 * NULL where no row is stored.
 */
export function storedVersionColumns(t: string): { name: string; sql: string; sqlType: string }[] {
  return [
    { name: PREVIOUS_FROM, sql: liveValidFrom(t), sqlType: 'TIMESTAMPTZ' },
    ...VERSION_COLUMNS.map((c, i) => ({ name: storedVersionKey(i), sql: `${t}.${quoteIdentifier(c.name)}`, sqlType: c.sqlType })),
  ];
}

/**
 * The version columns of the live rows a write appends from stage `s` (names and SQL values, in
 * `VERSION_COLUMNS` order): a version's own (`staged.isVersion`), or, for a row written unchanged, the stored
 * row's. Without `context` (no history written), a row keeps the stored row's or has none. `seqBase`: the
 * counter's value, read earlier in the same transaction (`CHANGE_SEQ_BASE_COLUMN`); a subquery for it in the
 * INSERT made DuckDB copy the whole batch into a cross product with its one row.
 */
export function liveVersionValues(
  s: string,
  staged: StagedVersion,
  context: VersionContext | undefined,
  seqBase: bigint,
): { names: string[]; values: string[] } {
  const stored = VERSION_COLUMNS.map((_, i) => `${s}.${quoteIdentifier(storedVersionKey(i))}`);
  if (context === undefined) return { names: VERSION_NAMES, values: stored };
  const observed = `CAST(${quoteLiteral(context.observedAt)} AS TIMESTAMPTZ)`;
  const { versionFrom } = validFromSql(`${s}.${staged.updatedAt}`, `${s}.${quoteIdentifier(PREVIOUS_FROM)}`, observed);
  const own: Record<VersionColumn, string> = {
    _version_from: versionFrom,
    _version_source: `CASE WHEN ${staged.wasDeleted} THEN 'restored' ELSE ${quoteLiteral(context.source)} END`,
    _version_run_id: context.runId === null ? 'CAST(NULL AS VARCHAR)' : quoteLiteral(context.runId),
    _version_observed_at: `CAST(${quoteLiteral(context.committedAt)} AS TIMESTAMPTZ)`,
    _version_seq: `CAST(${seqBase} AS BIGINT) + ${s}.${staged.position}`,
  };
  return {
    names: VERSION_NAMES,
    values: VERSION_COLUMNS.map((c, i) => `CASE WHEN ${staged.isVersion} THEN ${own[c.name]} ELSE ${stored[i]} END`),
  };
}

/**
 * Statements closing the versions the staged versions follow: each stored live row a version replaces is appended
 * to the store, closed where the new version starts. Run in the transaction that writes the live rows, before
 * those are replaced (a batch of new ids alone, a first load, needs none).
 */
export function closeVersionsSql(table: string, stage: string, staged: StagedVersion, context: VersionContext): string[] {
  const live = quoteIdentifier(table);
  const observed = `CAST(${quoteLiteral(context.observedAt)} AS TIMESTAMPTZ)`;
  const { validFrom } = validFromSql(`s.${staged.updatedAt}`, `s.${quoteIdentifier(PREVIOUS_FROM)}`, observed);
  const join = staged.storedRowid === undefined ? `t.id = s.${staged.id}` : `t.rowid = s.${staged.storedRowid}`;
  return [
    `INSERT INTO ${quoteIdentifier(historyStoreName(table))} (${INSERT_COLUMNS})
     SELECT ${closedFromLive('t', validFrom)}
     FROM (SELECT * FROM ${quoteIdentifier(stage)} WHERE ${staged.stored} AND ${staged.isVersion}) AS s JOIN ${live} AS t ON ${join}`,
  ];
}

/**
 * Mark live rows `ids` deleted at `deletedAt` (a complete sweep did not list them), each becoming a `deleted`
 * version (run `version.runId`, committed at `version.committedAt`) with its last content: the version it was is
 * closed into the store first. Rows already marked keep the time they first went missing. Runs in the caller's
 * transaction; returns the rows marked.
 */
export async function markDeleted(
  connection: DuckDBConnection,
  table: string,
  ids: readonly string[],
  deletedAt: string,
  version: { runId: string | null; committedAt: string },
): Promise<number> {
  const { runId, committedAt } = version;
  if (ids.length === 0) return 0;
  const live = quoteIdentifier(table);
  const { validFrom, versionFrom } = validFromSql('NULL', liveValidFrom('t'), 'CAST($2 AS TIMESTAMPTZ)');
  const marked = `t._deleted_at IS NULL AND t.id IN (SELECT unnest(CAST($1 AS VARCHAR[])))`;
  const params = [listValue([...ids]), deletedAt];
  await connection.run(
    `INSERT INTO ${quoteIdentifier(historyStoreName(table))} (${INSERT_COLUMNS})
     SELECT ${closedFromLive('t', validFrom)} FROM ${live} AS t WHERE ${marked}`,
    params,
  );
  // The SET sees the row as it was: the new version follows the one just closed. Each id's place in the list
  // numbers its version.
  const result = await connection.run(
    `UPDATE ${live} AS t SET _deleted_at = CAST($2 AS TIMESTAMPTZ), _version_from = ${versionFrom}, _version_source = 'deleted',
       _version_run_id = ${runId === null ? 'NULL' : quoteLiteral(runId)}, _version_observed_at = CAST(${quoteLiteral(committedAt)} AS TIMESTAMPTZ),
       _version_seq = ${CHANGE_SEQ_BASE} + m.position
     FROM (SELECT unnest(CAST($1 AS VARCHAR[])) AS id, generate_subscripts(CAST($1 AS VARCHAR[]), 1) AS position) AS m
     WHERE m.id = t.id AND t._deleted_at IS NULL`,
    params,
  );
  await connection.run(takeChangeSeqs(ids.length));
  return Number(result.rowsChanged);
}
