/** The bulk upsert of one batch into a record table, and the replacement of meeting log summaries. */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { MeetingLogSummary } from '../core/types.js';
import type { ColumnPlan } from './types.js';
import { quoteIdentifier, quoteLiteral } from './identifiers.js';
import { ndjsonKey, recordColumns, SUMMARY_COLUMNS, summaryRows, type NdjsonRows } from './rows.js';
import { stageRows, withNdjsonSource, type StageFile } from './staging.js';
import { VERSION_COLUMNS } from './history-names.js';
import {
  CHANGE_SEQ_BASE_COLUMN,
  closeVersionsSql,
  liveVersionValues,
  storedVersionColumns,
  takeChangeSeqs,
  type StagedVersion,
  type VersionContext,
} from './history.js';

const RECORD_STAGE = '_salesync_stage';
const SUMMARY_STAGE = '_salesync_summaries';
const SUMMARY_LOGS_STAGE = '_salesync_summary_logs';
const SUMMARY_CHANGED_STAGE = '_salesync_summary_changed';
/** The column `WITH ORDINALITY` numbers a batch's rows in (from 1): its versions' change_seq above the base. */
const ORDINALITY = 'ordinality';

export interface UpsertOptions {
  /** Write only rows whose content hash differs from the stored row's (a reconcile sweep). @defaultValue false */
  onlyChanged?: boolean;
  /** A reconcile sweep's key: every staged id is recorded in `reconcile_seen` under it, in this transaction. */
  sweepKey?: string;
  /**
   * Write rows older than the stored row too (the last version observed is the truth: `PageBatch.observedWins`).
   * @defaultValue false
   */
  observedWins?: boolean;
  /** With `observedWins`, a stored row newer than the staged one and written since this instant is kept (`PageBatch.observedSince`). */
  observedSince?: string;
  /**
   * The resource whose quarantine (`rejected_records`) the written records leave; in a sweep, every listed record
   * (it was seen valid). Absent: quarantine is left alone.
   */
  quarantineResource?: string;
  /**
   * What the versions this write appends to history say of themselves (source, run, when). Absent: no history is
   * written (the history table must exist otherwise: `ensureHistoryTable`).
   */
  versions?: VersionContext;
  /**
   * How the stage finds what the table stores for each id (`StoredLookup`). Either way the stage says the same.
   * @defaultValue 'ids'
   */
  lookup?: StoredLookup;
  /**
   * The caller knows the table stores none of the batch's ids (`IdFilter`): with the `'ids'` lookup, the batch is
   * written straight from its source without the probe, which scans every stored id.
   */
  storedNone?: boolean;
  /** Statements to run first, in the script that stages the batch (a BEGIN, the walk's checkpoint). */
  prelude?: readonly string[];
  /** Statements to run last, in the script that writes the batch (a COMMIT). */
  epilogue?: readonly string[];
}

export interface UpsertResult {
  /** Rows written. */
  written: number;
  /** Of those, rows whose content differed from the mirror (new, changed, or back after being marked deleted). */
  changed: number;
  /** Rows of the batch whose id the table stored before it, written or not. */
  stored: number;
  /** Set when the batch's probe found the table holding no row at all before it (a first load's first batch). */
  emptyBefore?: true;
}

/**
 * How a batch's stage is joined with the stored table, whose every row each join scans (there is no index).
 * `'ids'`: the stored ids alone, then the columns that decide a write only by rowid for the ids found, a join
 * DuckDB skips when none was: a batch of new ids (a first load) never reads those columns, a third of the scan
 * where the table holds a million rows. `'rows'`: those columns at once, one pass less when ids are found.
 */
export type StoredLookup = 'ids' | 'rows';

/**
 * The lookup for a table's next batch, from what its last one found (none yet: `'ids'`): ids alone after a batch
 * of new ids only (a walk of new records goes on that way), the stored rows at once after one that found any
 * (the second pass costs as much whether it finds one id or all of them). Pure.
 */
export function nextLookup(last: { stored: number } | undefined): StoredLookup {
  return last === undefined || last.stored === 0 ? 'ids' : 'rows';
}

/**
 * Stage what decides each of the (already deduplicated) records (its key line: `EncodedRow.key`) beside what the
 * table stores for its id, then, from that one pass over the table: close into history the stored version of each
 * written row whose content changed (`closeVersionsSql`; the row written is the new version, `liveVersionValues`),
 * skip rows older than the stored row unless `observedWins` (a late page must not regress a row; equal timestamps
 * rewrite idempotently), and write the rest: a stored row is replaced (deleted by its rowid and appended anew), a
 * new one appended. `kept` are the table's columns not in the plan (kept after a type change): a replaced row
 * carries their values over.
 *
 * Replaced, not updated: DuckDB holds what an UPDATE changed in memory until the next checkpoint (at a
 * 128 MB limit, re-writing 200k stored rows in batches of 2000 ran out of memory), while a delete marks rows
 * and an append writes them like any other; the deleted rows' space is reclaimed at checkpoints (a table
 * re-written four times over stayed the size it was). `lines` are the records' NDJSON rows (`encodeRecords`),
 * made before the transaction so a run encodes while the previous batch commits, in memory or in a stage file.
 *
 * Ids stay unique by construction (a deduplicated batch, replaced or appended in one transaction by the one
 * writer the file lock allows), not by a PRIMARY KEY: DuckDB keeps every key of an index in memory, so a
 * keyed table's footprint grows with the mirror (a 1M-record sync ran out of a 128 MB limit) and each append
 * pays for index upkeep. Without an index every join scans the table, so each batch joins it once, here.
 *
 * The stage and the rows keep the records' columns under their positional keys (`c0`, `c1`, …), never under the
 * service's names: a property named like one of the stage's own columns (`_older`, `_stored`) must not shadow it.
 */
export async function upsertRecords(
  connection: DuckDBConnection,
  table: string,
  plan: readonly ColumnPlan[],
  kept: readonly string[],
  lines: NdjsonRows | StageFile,
  options: UpsertOptions = {},
): Promise<UpsertResult> {
  const prelude = options.prelude ?? [];
  const epilogue = options.epilogue ?? [];
  if (lines.rows === 0) {
    if (prelude.length + epilogue.length > 0) await connection.run([...prelude, ...epilogue].join(';\n'));
    return { written: 0, changed: 0, stored: 0 };
  }
  const stage = quoteIdentifier(RECORD_STAGE);
  const target = quoteIdentifier(table);
  const columns = recordColumns(plan);
  const names = [...columns.map((c) => quoteIdentifier(c.name)), ...kept.map(quoteIdentifier)];
  // The stage's column holding a record column (system columns are unique: no property takes their names).
  const keys = columns.map((_, i) => quoteIdentifier(ndjsonKey(i)));
  // The stored row's kept columns, under names of the stage's own.
  const keptKeys = kept.map((_, i) => quoteIdentifier(`k${i}`));
  const staged = (name: string) => keys[columns.findIndex((c) => c.name === name)]!;
  const id = staged('id');
  const createdAt = staged('created_at');
  const updatedAt = staged('updated_at');
  const properties = staged('_properties');
  const contentHash = staged('_content_hash');
  // Rows not written: older than the stored row (unless the observed version wins), and in a sweep also those
  // whose content is what is stored.
  const skipped = options.observedWins
    ? options.onlyChanged
      ? '(_same OR _superseded)'
      : '_superseded'
    : options.onlyChanged
      ? '(_older OR _same)'
      : '_older';
  // Rows whose records leave quarantine: written ones; in a sweep, every one listed.
  const leaving = options.sweepKey === undefined ? `NOT ${skipped}` : 'true';
  // A column named `rowid` hides DuckDB's own (no property takes that name now, but a warehouse made before may
  // have one): there, stored rows are found by id, one more scan of the table.
  const rowidHidden = [...columns.map((c) => c.name), ...kept].some((name) => name.toLowerCase() === 'rowid');
  const replaced = `SELECT ${rowidHidden ? id : '_stored_rowid'} FROM ${stage} WHERE _stored AND NOT ${skipped}`;
  // Two round trips per batch (each result would otherwise wait for a busy event loop): the stage with what it
  // holds, then the writes it needs. Statements that would find nothing are left out: a first load neither
  // replaces stored rows nor looks for rows stored before content hashes, and a re-sync that writes nothing
  // appends nothing (each costs a few milliseconds even when empty).
  // How many of the resource's records are in quarantine (a batch's written records leave it).
  const quarantined =
    options.quarantineResource === undefined
      ? []
      : [`(SELECT count(*) FROM rejected_records WHERE resource = ${quoteLiteral(options.quarantineResource)})::INTEGER AS quarantined`];
  // Each round trip that precedes a write also reads the change counter, for the versions' change_seq.
  const seqBase = options.versions === undefined ? [] : [CHANGE_SEQ_BASE_COLUMN];
  const counts = `SELECT count(*) FILTER (WHERE _stored)::INTEGER AS stored,
            count(*) FILTER (WHERE _stored AND NOT ${skipped})::INTEGER AS replaced,
            count(*) FILTER (WHERE _legacy)::INTEGER AS legacy,
            count(*) FILTER (WHERE NOT ${skipped})::INTEGER AS n,
            count(*) FILTER (WHERE NOT ${skipped} AND _changed)::INTEGER AS changed,
            count(*) FILTER (WHERE NOT ${skipped} AND _changed AND _stored)::INTEGER AS restated${[...quarantined, ...seqBase].map((q) => `, ${q}`).join('')}
     FROM ${stage}`;
  // What the stored row `t` says of the staged row `s` (null columns where no row is stored), for either lookup.
  const said = (s: string): [flag: string, sql: string][] => [
    ['_older', `coalesce(t.updated_at > ${s}.${updatedAt}, false)`],
    // Older than a row written since the walk began: that row was observed after this one (see `observedSince`).
    [
      '_superseded',
      options.observedSince === undefined
        ? 'false'
        : `coalesce(t.updated_at > ${s}.${updatedAt} AND t._synced_at >= CAST(${quoteLiteral(options.observedSince)} AS TIMESTAMPTZ), false)`,
    ],
    ['_was_deleted', 't._deleted_at IS NOT NULL'],
    ['_same', `coalesce(t._content_hash = ${s}.${contentHash} AND t._deleted_at IS NULL, false)`],
    ['_changed', `t.id IS NULL OR t._deleted_at IS NOT NULL OR t._content_hash IS DISTINCT FROM ${s}.${contentHash}`],
    ['_legacy', 't.id IS NOT NULL AND t._content_hash IS NULL'],
  ];
  // What the stage keeps of the stored row's version (null where none is stored).
  const storedVersion = (t: string) => storedVersionColumns(t).map((c) => ({ ...c, name: quoteIdentifier(c.name) }));
  // By ids first only where rowids find the stored rows and no kept column must be carried over (both rare).
  const byIds = (options.lookup ?? 'ids') === 'ids' && !rowidHidden && kept.length === 0;
  // What the stage says of a row whose id is not stored, but for `_stored` and `_stored_rowid`.
  const asNew = `false AS _older, false AS _superseded, false AS _was_deleted, false AS _same, true AS _changed, false AS _legacy, ${storedVersion(
    't',
  )
    .map((c) => `CAST(NULL AS ${c.sqlType}) AS ${c.name}`)
    .join(', ')}`;
  // The stage holds what decides each row only (its place, id, updated_at and hash, and what the stored row says),
  // made from the batch's key lines where it has them (`EncodedRow.key`: DuckDB parses every byte of a line however
  // few of its columns are read), in the rows' order: the INSERT then reads the rows once, each beside its own
  // decision by position, without copying them or building a hash table of them (docs/performance.md). `aligned`
  // fails the batch should a row and its decision ever differ in place.
  const staging = (rowsSource: string, keysSource: string | undefined): string[] =>
    decisions(`(SELECT ${[ORDINALITY, id, updatedAt, contentHash].join(', ')} FROM ${keysSource ?? rowsSource})`);
  const decisions = (source: string): string[] =>
    byIds
      ? [
          // Every staged row as if its id were new; then the rows whose id is stored, from their stored row.
          `CREATE OR REPLACE TEMP TABLE ${stage} AS
           SELECT s.*, t.id IS NOT NULL AS _stored, t._rowid AS _stored_rowid, ${asNew}
           FROM ${source} AS s LEFT JOIN (SELECT id, rowid AS _rowid FROM ${target}) AS t ON t.id = s.${id}
           ORDER BY s.${ORDINALITY}`,
          `UPDATE ${stage} SET ${[...said(stage).map(([flag, sql]) => `${flag} = ${sql}`), ...storedVersion('t').map((c) => `${c.name} = ${c.sql}`)].join(', ')}
           FROM (SELECT rowid AS _rowid, id, updated_at, _synced_at, _deleted_at, _content_hash, ${VERSION_COLUMNS.map((c) => quoteIdentifier(c.name)).join(', ')}
                 FROM ${target}) AS t
           WHERE ${stage}._stored_rowid = t._rowid`,
        ]
      : [
          // What the stored row says about each staged one, from the narrow columns only (and kept ones, rare):
          // the join scans every stored row's copy of what it references, and `_properties` is most of a table.
          `CREATE OR REPLACE TEMP TABLE ${stage} AS
           SELECT s.*,${kept.map((name, i) => ` t.${quoteIdentifier(name)} AS ${keptKeys[i]},`).join('')}
             t.id IS NOT NULL AS _stored, ${[...said('s').map(([flag, sql]) => `${sql} AS ${flag}`), ...storedVersion('t').map((c) => `${c.sql} AS ${c.name}`)].join(', ')}${
               rowidHidden ? '' : ', t.rowid AS _stored_rowid'
             }
           FROM ${source} AS s LEFT JOIN ${target} AS t ON t.id = s.${id}
           ORDER BY s.${ORDINALITY}`,
        ];
  // Which staged rows are versions, and what the live rows written say of theirs.
  const stagedVersion: StagedVersion = {
    id,
    createdAt,
    updatedAt,
    ...(rowidHidden ? {} : { storedRowid: '_stored_rowid' }),
    isVersion: `NOT ${skipped} AND _changed`,
    wasDeleted: '_was_deleted',
    stored: '_stored',
    position: ORDINALITY,
  };
  const versionColumns = (read: Record<string, unknown>) =>
    liveVersionValues('s', stagedVersion, options.versions, options.versions === undefined ? 0n : BigInt(read.seq_base as bigint));
  // What the batch settles beside its rows, given queries of its ids: every listed id counts as seen by a sweep,
  // written or not (only ids never listed are candidates for deletion); the written ones leave quarantine.
  const settled = (listedIds: string, writtenIds: string, quarantinedCount: number): string[] => [
    ...(options.sweepKey === undefined
      ? []
      : [`INSERT INTO reconcile_seen (sweep_key, id) SELECT ${quoteLiteral(options.sweepKey)}, id FROM (${listedIds}) AS l(id)`]),
    ...(quarantinedCount === 0
      ? []
      : [`DELETE FROM rejected_records WHERE resource = ${quoteLiteral(options.quarantineResource!)} AND id IN (${writtenIds})`]),
  ];
  // The batch's ids, from the encoder where it kept them (`NdjsonRows.ids`), else from the rows.
  const batchIds = (source: string) =>
    lines.ids === undefined ? `SELECT s.${id} FROM ${source} AS s` : `SELECT unnest(string_split(${quoteLiteral(lines.ids)}, chr(10)))`;
  // The versions a batch wrote are numbered by their rows' place in it: the counter moves past every row.
  const takeSeqs = options.versions === undefined ? [] : [takeChangeSeqs(lines.rows)];
  /** The writes a staged batch needs, given what its stage holds (`first`: the `counts`), with `source` still there. */
  const writeStaged = async (source: string, first: Record<string, unknown>): Promise<UpsertResult> => {
    const versions = versionColumns(first);
    const aligned = `CASE WHEN r.${id} = s.${id} THEN true ELSE error(${quoteLiteral(
      `salesync: the stage of a batch for ${table} lost its order (a bug: please report it); nothing of the batch was written`,
    )}) END`;
    const statements = [
      // A row stored before content hashes has none: its raw properties and timestamps decide whether it
      // changed, so an upgrade is not counted as drift.
      ...(Number(first.legacy) === 0
        ? []
        : [
            `UPDATE ${stage} SET _changed = l._changed
           FROM (SELECT s.${id} AS id,
                   CAST(t._properties AS VARCHAR) IS DISTINCT FROM CAST(s.${properties} AS VARCHAR)
                     OR t.updated_at IS DISTINCT FROM s.${updatedAt} OR t.created_at IS DISTINCT FROM s.${createdAt}
                     OR t._deleted_at IS NOT NULL AS _changed
                 FROM (SELECT r.* FROM ${source} AS r JOIN ${stage} AS g ON g.${id} = r.${id} WHERE g._legacy) AS s
                   JOIN ${target} AS t ON t.id = s.${id}) AS l
           WHERE ${stage}.${id} = l.id`,
          ]),
      // History is the mirror's: a written row whose content changed (new, different, back from deleted) is a
      // version, in this transaction; the one its stored row was is closed into the store before the row is replaced.
      ...(options.versions === undefined || (Number(first.restated) === 0 && Number(first.legacy) === 0)
        ? []
        : closeVersionsSql(table, RECORD_STAGE, stagedVersion, options.versions)),
      ...settled(`SELECT ${id} FROM ${stage}`, `SELECT ${id} FROM ${stage} WHERE ${leaving}`, Number(first.quarantined ?? 0)),
      ...(Number(first.replaced) === 0 ? [] : [`DELETE FROM ${target} WHERE ${rowidHidden ? 'id' : 'rowid'} IN (${replaced})`]),
      ...(Number(first.n) === 0
        ? []
        : [
            `INSERT INTO ${target} (${[...names, ...versions.names].join(', ')})
           SELECT ${[...keys.map((k) => `r.${k}`), ...keptKeys, ...versions.values].join(', ')}
           FROM ${source} AS r POSITIONAL JOIN ${stage} AS s WHERE NOT ${skipped} AND ${aligned}`,
            ...takeSeqs,
          ]),
    ];
    const drop = `DROP TABLE ${stage}`;
    if (Number(first.legacy) === 0) {
      await connection.run([...statements, drop, ...epilogue].join(';\n'));
      return { written: Number(first.n), changed: Number(first.changed), stored: Number(first.stored) };
    }
    // The legacy fix changes what counts as changed: counted again after it, before the stage goes.
    const reader = await connection.runAndReadAll([...statements, counts].join(';\n'));
    const final = reader.getRowObjects()[0]!;
    await connection.run([drop, ...epilogue].join(';\n'));
    return { written: Number(final.n), changed: Number(final.changed), stored: Number(first.stored) };
  };
  return withNdjsonSource(columns, lines, async (read, readKeys) => {
    // In a subquery: DuckDB 1.5 binds `alias.*` of a table function WITH ORDINALITY as ambiguous.
    const source = `(SELECT * FROM ${read} WITH ORDINALITY)`;
    const keysSource = readKeys === undefined ? undefined : `(SELECT * FROM ${readKeys} WITH ORDINALITY)`;
    const stageBatch = async (before: readonly string[]) => {
      const first = (await connection.runAndReadAll([...before, ...staging(source, keysSource), counts].join(';\n'))).getRowObjects()[0]!;
      return writeStaged(source, first);
    };
    if (!byIds) return stageBatch(prelude);
    // Looked up by ids, a batch usually finds none stored (a first load): then it is written straight from its
    // source, never staged, and its rows are parsed once, by the INSERT (the probe, the sweep and the quarantine
    // take the encoder's ids: reading them from the rows parsed every line). Otherwise it is staged.
    const looked = options.storedNone
      ? ['0 AS stored', 'false AS empty']
      : [
          `(SELECT count(*) FROM ${target} WHERE id IN (${batchIds(source)}))::INTEGER AS stored`,
          `NOT EXISTS (SELECT 1 FROM ${target}) AS empty`,
        ];
    const probe = await connection.runAndReadAll([...prelude, `SELECT ${[...looked, ...quarantined, ...seqBase].join(', ')}`].join(';\n'));
    const found = probe.getRowObjects()[0]!;
    if (Number(found.stored) > 0) return stageBatch([]);
    const versions = versionColumns(found);
    const fresh = `(SELECT s.*, false AS _stored, CAST(NULL AS BIGINT) AS _stored_rowid, ${asNew} FROM ${source} AS s)`;
    await connection.run(
      [
        // Every row is written: each listed id leaves quarantine.
        ...settled(batchIds(source), batchIds(source), Number(found.quarantined ?? 0)),
        `INSERT INTO ${target} (${[...names, ...versions.names].join(', ')})
         SELECT ${[...keys, ...versions.values].join(', ')} FROM ${fresh} AS s`,
        ...takeSeqs,
        ...epilogue,
      ].join(';\n'),
    );
    // Written straight from the source: every row new, every row changed.
    return { written: lines.rows, changed: lines.rows, stored: 0, ...(found.empty === true ? { emptyBefore: true } : {}) };
  });
}

/**
 * Each listed log's stored summaries are replaced by the given ones (an empty list clears them), but only for
 * logs whose summaries differ from what is stored: unchanged logs are not rewritten. With `readAt` (the server
 * time of the reads), each listed log's re-read schedule moves on (`meeting_log_summary_reads`): a log read for
 * the first time or found changed starts again from no unchanged reads; one found unchanged counts one more.
 * Returns the logs changed.
 */
export async function replaceSummaries(
  connection: DuckDBConnection,
  summaries: ReadonlyMap<string, readonly MeetingLogSummary[]>,
  readAt?: string,
): Promise<number> {
  if (summaries.size === 0) return 0;
  await stageRows(
    connection,
    SUMMARY_LOGS_STAGE,
    [{ name: 'id', sqlType: 'VARCHAR' }],
    [...summaries.keys()].map((id) => ({ id })),
  );
  await stageRows(
    connection,
    SUMMARY_STAGE,
    SUMMARY_COLUMNS,
    [...summaries.entries()].flatMap(([id, list]) => summaryRows(id, list)),
  );
  const logs = quoteIdentifier(SUMMARY_LOGS_STAGE);
  const stage = quoteIdentifier(SUMMARY_STAGE);
  const changedLogs = quoteIdentifier(SUMMARY_CHANGED_STAGE);
  // Compared without their places: the spec fixes no order for the array, and a service that gives it in another
  // order each time would have every log rewritten, and read again, on every read.
  const columns = SUMMARY_COLUMNS.filter((c) => c.name !== 'position')
    .map((c) => quoteIdentifier(c.name))
    .join(', ');
  const stored = `SELECT ${columns} FROM meeting_log_summaries WHERE meeting_log_id IN (SELECT id FROM ${logs})`;
  // A log changed when any row differs either way, counting repeats (set operations compare NULLs and nested
  // values as equal).
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE ${changedLogs} AS
     SELECT DISTINCT meeting_log_id AS id FROM (
       (SELECT ${columns} FROM ${stage} EXCEPT ALL ${stored})
       UNION ALL
       (${stored} EXCEPT ALL SELECT ${columns} FROM ${stage}))`,
  );
  const counted = await connection.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM ${changedLogs}`);
  const changed = Number(counted.getRowObjects()[0]?.n ?? 0);
  if (changed > 0) {
    await connection.run(`DELETE FROM meeting_log_summaries WHERE meeting_log_id IN (SELECT id FROM ${changedLogs})`);
    await connection.run(
      `INSERT INTO meeting_log_summaries BY NAME SELECT * FROM ${stage} WHERE meeting_log_id IN (SELECT id FROM ${changedLogs})`,
    );
  }
  if (readAt !== undefined) {
    await connection.run(
      `INSERT INTO meeting_log_summary_reads (meeting_log_id, last_read_at, unchanged_reads)
       SELECT l.id, CAST($1 AS TIMESTAMPTZ), CASE WHEN r.meeting_log_id IS NULL OR c.id IS NOT NULL THEN 0 ELSE r.unchanged_reads + 1 END
       FROM ${logs} AS l
         LEFT JOIN ${changedLogs} AS c ON c.id = l.id
         LEFT JOIN meeting_log_summary_reads AS r ON r.meeting_log_id = l.id
       ON CONFLICT (meeting_log_id) DO UPDATE SET last_read_at = excluded.last_read_at, unchanged_reads = excluded.unchanged_reads`,
      [readAt],
    );
  }
  for (const table of [stage, logs, changedLogs]) await connection.run(`DROP TABLE ${table}`);
  return changed;
}
