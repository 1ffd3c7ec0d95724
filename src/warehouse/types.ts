import type { AppliedPolicy, ResourcePolicy } from '../core/property-policy.js';
import type { RecordResourceName, ResourceName } from '../core/resources.js';
import type {
  MeetingLogSummary,
  PropertyDefinition,
  RejectedRecord,
  ServiceRecord,
  ServiceUser,
  WalkCheckpoint,
  WalkMode,
} from '../core/types.js';
import type { CatalogRelation } from './dbt-sources.js';
import type { SnapshotResult } from './snapshot.js';

/** Where a read of the feed starts: after a cursor (`change_seq`), or at a commit time (ISO, our clock). */
export type ChangeSince = { cursor: bigint } | { time: string };

export interface ChangeQuery {
  /** Resources to include; empty: all. The cursor still covers every resource. */
  resources: readonly RecordResourceName[];
  since: ChangeSince;
}

/** One change as the feed gives it (JSON-friendly: `change_seq` is a decimal string). */
export interface ChangeRow {
  change_seq: string;
  resource: string;
  id: string;
  kind: 'insert' | 'update' | 'delete' | 'restore';
  changed_at: string;
  committed_at: string;
  source: string;
  run_id: string | null;
  old_properties: unknown;
  new_properties: unknown;
  changed_properties: string[];
}

export interface ChangeFeed {
  changes: ChangeRow[];
  /** Pass it as `since` next time: every change committed up to this read is at or below it. */
  cursor: string;
  /** False when the warehouse has no feed yet (no sync has written it since history became SCD2). */
  available: boolean;
}

/** What writes a batch: the source of the history versions it appends. */
export type BatchSource = 'incremental' | 'backfill' | 'reconcile';

/** Where a writer publishes its file, and for whom. */
export interface PublishOptions {
  /** The analysts' file (`WAREHOUSE_PATH`), replaced atomically by each publish; never opened read-write. */
  path: string;
  /** Its file mode (SALESYNC_PUBLISH_MODE). @defaultValue 0o640 */
  mode?: number;
  /** Its group, a name or gid (SALESYNC_PUBLISH_GROUP). @defaultValue the owner's */
  group?: string | null;
  /** During a long walk, publish at most this often, after a commit (SALESYNC_PUBLISH_EVERY); 0: only at run ends. @defaultValue 0 */
  everyMs?: number;
  /** Further copies, published with the same content (WAREHOUSE_SNAPSHOT_PATH). @defaultValue none */
  copies?: readonly string[];
}

/** The property policy a resource's stored data was written under, as `applyPropertyPolicy` recorded it. */
export interface StoredPropertyPolicy {
  policy: ResourcePolicy;
  keyId: string | null;
  fingerprint: string;
}

/** What `applyPropertyPolicy` did. */
export interface PolicyPurge {
  /** Columns dropped from the resource table. */
  columns: string[];
  /** Whether the file was rewritten (something was purged). */
  compacted: boolean;
}

/** How a property is held in its resource table. */
export interface ColumnPlan {
  apiName: string;
  /** The resource table's column (unquoted name; always quoted in SQL). */
  columnName: string;
  propertyType: string;
  /** The DuckDB type of the column. */
  sqlType: string;
}

export interface ResourceState {
  resource: ResourceName;
  /** ISO 8601 server time: the next incremental walk asks for records updated after it (minus lookback). */
  watermark: string | null;
  /** The in-progress walk, when one was interrupted. */
  walk: WalkCheckpoint | null;
  /** When the last walk completed (ISO). */
  lastCompletedAt: string | null;
  /**
   * Where the next incremental walk starts instead of `watermark`, when the last one must be listed again (see
   * `planWalk`); null when it need not.
   */
  confirmFrom: string | null;
}

/**
 * A batch's records as a walk gathers them, page by page (`Warehouse.recordBuffer`): the warehouse may encode them
 * as they come, so the batch holds their rows rather than the records.
 */
export interface RecordBuffer {
  /** Records added so far, an id added twice counted twice. */
  readonly added: number;
  /** Take a page's records (its work done in turns of the event loop); resolves once they are taken. */
  add(records: readonly ServiceRecord[]): Promise<void>;
}

/** A batch of one or more pages, committed in one transaction with the checkpoint that follows them. */
export interface PageBatch {
  /** The records, as a list or in a buffer this warehouse gave (`recordBuffer`). */
  records: readonly ServiceRecord[] | RecordBuffer;
  /** Meeting logs only: the summaries of each log in `records`, replacing what was stored for it. */
  summaries?: Map<string, MeetingLogSummary[]>;
  /**
   * Where the walk stands after these records. `cursor: null` means the walk is complete. Absent for writes
   * that are not part of a walk (the summaries job re-fetching single views).
   */
  checkpoint?: WalkCheckpoint;
  /** Set when the walk is complete: the new watermark, stored in the same transaction. */
  completeWatermark?: string | null;
  /** With `completeWatermark`: where the next incremental walk starts instead (`ResourceState.confirmFrom`). */
  confirmFrom?: string | null;
  /**
   * The `sync_state` row the checkpoint goes to. @defaultValue the resource name. A backfill uses its own
   * (`deals#backfill`) so it never clobbers the incremental walk's checkpoint or watermark.
   */
  stateKey?: string;
  /** Set when the batch belongs to a reconcile sweep (see `SweepBatch`). */
  sweep?: SweepBatch;
  /**
   * The last version observed is the truth: write each record even when its `updated_at` is older than the stored
   * row's (a service that corrected its clock), and within the batch the last occurrence wins. Full walks,
   * backfills and reconciles set it; incremental walks keep the newer `updated_at` (a late page must not regress a
   * row written by a fresher read). @defaultValue false
   */
  observedWins?: boolean;
  /**
   * With `observedWins`: when the walk began, on this host's clock (ISO), less the lookback. A stored row written at
   * or after it (`_synced_at`) whose `updated_at` is newer was observed after this batch's pages were read (a sync
   * beside a reconcile, which nothing keeps apart without Redis), or shortly before by a read a replica behind has not
   * caught up with: it is kept, not regressed. @defaultValue none: observed wins
   */
  observedSince?: string;
  /**
   * Records of this batch's pages that failed validation: upserted into `rejected_records` under the resource with
   * `runId`. Every record written by the batch leaves quarantine (a fixed record is retried by the walk that sees it).
   */
  rejects?: RejectedRecord[];
  /** The `sync_runs` row this batch belongs to (quarantine rows and history versions name it). */
  runId?: string;
  /**
   * What wrote the batch, recorded on the history versions it appends (a record back from deleted is `restored`
   * whatever wrote it). @defaultValue 'incremental'
   */
  source?: BatchSource;
  /**
   * When the batch's records were seen, on the service's clock where known (the last answer's `Date`): `valid_from`
   * of a version whose `updated_at` did not move forward. @defaultValue the commit's time (our clock)
   */
  observedAt?: string;
  /**
   * The last batch of a clean pass over the records updated at or after `since` (all when null): entries in
   * quarantine that run `runId` did not put or keep there, and whose record fell in that window, are removed (fixed
   * or gone; one whose id was the broken part can leave no other way). @defaultValue absent: none removed
   */
  settlesQuarantine?: { since: string | null };
  /**
   * Server time at which `summaries` were read: each listed log's re-read schedule moves on from it (see
   * `SummariesDue`). Absent: the schedule is left as it is.
   */
  summariesReadAt?: string;
}

/**
 * A batch made ready for its commit ahead of time (`prepareBatch`): its records checked and encoded while
 * earlier commits are written. Opaque: only `commitBatch` reads it.
 */
export interface PreparedBatch {
  readonly resource: RecordResourceName;
  readonly batch: PageBatch;
}

/**
 * A reconcile sweep's batch: only rows whose content changed are written, and every listed id is recorded as seen
 * (in the same transaction). Deletions are not decided here: once the sweep is complete and clean, the sync asks
 * `sweepCandidates` and confirms each before `completeSweep` marks it.
 */
export interface SweepBatch {
  /** Names the sweep's seen-id set (`reconcile_seen.sweep_key`), e.g. `deals#reconcile`. */
  key: string;
  /** The first batch of a sweep that did not resume: ids seen by an abandoned sweep are forgotten first. */
  fresh: boolean;
}

/** What a complete sweep did not list: rows it would mark deleted once each is confirmed gone. */
export interface SweepCandidates {
  /** Live rows (not marked deleted) updated before the sweep started that the sweep never listed. */
  ids: string[];
  /** Live rows of the table, for the share check. */
  live: number;
}

/** Which meeting logs are due for a re-read of their summaries. */
export interface SummariesDue {
  /** Logs created at or after this instant are in the window. */
  createdAfter: string;
  /** The server's now: a log whose next read is due at or before it is a candidate. */
  serverNow: string;
  /**
   * Statuses the operator declared final (`SALESYNC_SUMMARIES_FINAL`): a log whose summaries are non-empty and all
   * in it is settled at once. null: settledness is learned (unchanged reads spaced ever further apart).
   */
  finalStatuses: readonly string[] | null;
  /**
   * How a log's re-reads are spaced: due `recheckMs` after a read that found its summaries changed (or a first
   * read), doubled for each read since that found them unchanged (`last_read_at + recheckMs × 2^unchanged_reads`).
   */
  recheckMs: number;
}

/** One file `exportParquet` wrote. */
export interface ExportedFile {
  /** The table or view exported. */
  relation: string;
  kind: 'table' | 'view';
  file: string;
  rows: number;
}

export interface CommitResult {
  /** Rows written. */
  written: number;
  /** Rows whose content differed from the mirror (new, changed, or back after being marked deleted). */
  changed: number;
  /** Rows marked deleted by a completing sweep. */
  deleted: number;
  /** Meeting logs whose stored summaries differed from the ones given (and were replaced). */
  summariesChanged: number;
}
/**
 * `succeeded_with_rejects`: the walk completed, but records that failed validation are in quarantine
 * (`rejected_records`). `abandoned`: its process ended without recording an end (see `RunOwner`).
 */
export type RunOutcome = 'running' | 'succeeded' | 'succeeded_with_rejects' | 'failed' | 'interrupted' | 'skipped' | 'abandoned';

/** The process that starts runs, as recorded in `sync_runs` (`host`, `pid`, `process_id`). */
export interface RunOwner {
  host: string;
  pid: number;
  /** Unique to this process: tells its rows apart from those of an earlier process with the same pid. */
  processId: string;
  isAlive(pid: number): boolean;
}

export interface RunStart {
  resource: ResourceName;
  mode: WalkMode | 'refresh' | 'backfill' | 'reconcile' | 'summaries';
  startedAt: Date;
}

export interface RunFinish {
  finishedAt: Date;
  pages: number;
  records: number;
  requests: number;
  retries: number;
  rateLimited: number;
  outcome: RunOutcome;
  errorCode?: string | null;
  errorMessage?: string | null;
  /** Drift found: rows (or, for `summaries`, logs' summaries) whose content had changed unseen. */
  changed?: number | null;
  /** Rows a complete reconcile sweep marked deleted. */
  deleted?: number | null;
  /** Records put in (or kept in) quarantine by this run. */
  rejected?: number | null;
  /** Passes walked (a pass that saw the list move is walked again). */
  passes?: number | null;
  /** False when the last pass still saw the list move: the watermark was left where it was. */
  settled?: boolean | null;
}

export interface RunRow extends RunStart, Partial<RunFinish> {
  runId: string;
  outcome: RunOutcome;
}

export interface WarehouseOptions {
  /**
   * The DuckDB file this Warehouse works on. Its directory is created when missing. With `publish`, it is the
   * writer's own file (see `writerPathFor`); with `readOnly`, the published file.
   */
  path: string;
  /**
   * Publish the file to `publish.path` whenever something was written since the last publish: after a run's end
   * (`finishRun`, failed or not) once no other run is under way (`RUN_END_SETTLE_MS`), at most `everyMs` after the
   * last publish while others are, every `everyMs` during a long walk (after a commit), and at once on
   * `publish()` and `close()`. Before its first
   * call, a missing `path` takes over the file at `publish.path` (an earlier release's warehouse).
   * @defaultValue no publishing
   */
  publish?: PublishOptions;
  /**
   * A reader of a published file: every call opens it READ_ONLY (whatever lies beside it) and closes it, and
   * writes fail with `warehouse_read_only`; a missing file is `warehouse_missing`, one this user may not read
   * `warehouse_unreadable`. @defaultValue false
   */
  readOnly?: boolean;
  /**
   * How long a writer waits for a file held by another process before failing with `warehouse_locked`.
   * @defaultValue 300000
   */
  lockTimeoutMs?: number;
  /**
   * How long the file stays open after a write, for the next call of the same run. 0 closes after every call.
   * @defaultValue 0
   */
  lingerMs?: number;
  /**
   * Bytes of rows a filling batch (`recordBuffer`) holds in memory before they go on to its stage file.
   * @defaultValue `BATCH_SPILL_BYTES` (4 MiB)
   */
  batchSpillBytes?: number;
  /**
   * DuckDB's `memory_limit` for this process's sessions (e.g. `200MB`): past it, DuckDB evicts cached blocks
   * and spills to temporary files rather than growing. @defaultValue 96MB for commits (256MB for queries and exports), raised for a
   * batch into a table of many property columns or holding a record over 16 MiB (`automaticMemoryLimit`)
   */
  memoryLimit?: string;
  logger?: import('pino').Logger;
  /** Who this process is in `sync_runs`. @defaultValue this host and pid, the process id from pid and start time */
  runOwner?: RunOwner;
}

/**
 * The DuckDB mirror. Every method opens the file, does its work in one transaction, and closes it again:
 * the file is held only while writing, so analysts can open it read-only in between.
 */
export interface Warehouse {
  /**
   * The warehouse as users and other processes name it (leases are keyed by it): `WarehouseOptions.publish.path`
   * when this handle publishes (WAREHOUSE_PATH), else the file it opens.
   */
  readonly path: string;
  /** The DuckDB file this handle opens: the writer's own file when it publishes (`WarehouseOptions.path`). */
  readonly filePath: string;
  /** Create the fixed tables when missing. Idempotent. */
  ensureSchema(): Promise<void>;
  /** Record the definitions and evolve the resource table (new property, new column). Returns the column plan. */
  applyPropertyDefinitions(resource: RecordResourceName, definitions: PropertyDefinition[]): Promise<ColumnPlan[]>;
  /**
   * Upsert the batch's records (latest `updated_at` wins within the batch, or the last occurrence with
   * `observedWins`), quarantine its rejects, and store its checkpoint, atomically.
   */
  commitBatch(resource: RecordResourceName, batch: PageBatch | PreparedBatch): Promise<CommitResult>;
  /**
   * Check and encode a batch now, for a `commitBatch` later: a walk prepares its next batch while the one before
   * is written. Never throws; a batch that cannot be written fails its `commitBatch`.
   */
  prepareBatch(resource: RecordResourceName, batch: PageBatch): PreparedBatch;
  /**
   * Let go at once of what a prepared batch that will never be committed holds (its stage file), rather than when
   * the warehouse closes: a walk's commit before it failed.
   */
  discardBatch(batch: PreparedBatch): void;
  /**
   * A buffer for the records of one batch of `resource`, to commit as its `records`: encoded as they are added
   * (with the table's plan; re-encoded at the commit if that changed), deduplicated as `commitBatch` would
   * (`observedWins` as the batch will say).
   */
  recordBuffer(resource: RecordResourceName, options: { observedWins: boolean }): RecordBuffer;
  /**
   * Replace the users table with a complete listing, in one transaction; users no longer listed get `_deleted_at`,
   * except those listed but rejected (`rejects`, put in quarantine under `users`).
   */
  replaceUsers(
    users: ServiceUser[],
    completedAt: string,
    rejects?: { rejects: RejectedRecord[]; runId: string },
  ): Promise<{ written: number }>;
  /** Ids of the users stored and not marked deleted. */
  liveUserIds(): Promise<string[]>;
  /**
   * Stored `updated_at` (ISO, full precision) of the given ids, for those present and not marked deleted (a row
   * marked deleted that is listed again is as new: its details are read again).
   */
  storedUpdatedAt(resource: RecordResourceName, ids: string[]): Promise<Map<string, string>>;
  /**
   * Meeting logs (not marked deleted) in the window whose summaries are due for a re-read (never read, or their
   * next read is due; not settled): id → stored `updated_at` (ISO, full precision), newest logs first.
   */
  logsAwaitingSummaries(due: SummariesDue): Promise<Map<string, string>>;
  /** After a complete, clean sweep: what it never listed, for confirmation one by one. */
  sweepCandidates(resource: RecordResourceName, sweepKey: string): Promise<SweepCandidates>;
  /**
   * End a sweep in one transaction: mark `deletedIds` deleted at `deletedAt` (rows already marked keep their
   * time; each marked row gets a `deleted` history version naming `runId`), forget the sweep's seen ids, and record its completion on its state row (`stateKey`). Returns rows marked.
   */
  completeSweep(
    resource: RecordResourceName,
    sweep: { key: string; stateKey: string; deletedIds: string[]; deletedAt: string; completedAt: string; runId?: string },
  ): Promise<number>;
  /** Records in quarantine per resource (`rejected_records`). */
  rejectedCounts(): Promise<Record<string, number>>;
  /**
   * Ids of `resource`'s records in quarantine that run `exceptRun` did not put or keep there, at most `limit`, drawn
   * at random.
   */
  quarantinedIds(resource: RecordResourceName, options: { exceptRun?: string; limit: number }): Promise<string[]>;
  /** The state of a resource's walk, or of another walk of it kept under `stateKey` (a backfill). */
  readState(resource: ResourceName, stateKey?: string): Promise<ResourceState>;
  /** Forget an interrupted walk (for `--full` after an incremental walk was cut, and the like). */
  clearWalk(resource: ResourceName): Promise<void>;
  startRun(run: RunStart): Promise<string>;
  finishRun(runId: string, finish: RunFinish): Promise<void>;
  recentRuns(limit: number): Promise<RunRow[]>;
  /** The latest run of each resource and mode, however many runs came after it (newest first). */
  latestRuns(): Promise<RunRow[]>;
  /** Row counts of the resource tables (rows not marked deleted). */
  tableCounts(): Promise<Record<string, number>>;
  /**
   * Run a read-only query (used by `query`, the demo, and tests) on a READ_ONLY session with external access off
   * and the configuration locked; a statement that is not a read fails with `query_refused` before anything runs.
   * Values come back as JSON-friendly JS. With `maxRows`, the result is streamed and at most `maxRows + 1` rows
   * come back (one more than asked says there were more), so a huge result never fills memory.
   */
  query(sql: string, options?: { maxRows?: number }): Promise<Record<string, unknown>[]>;
  /**
   * Publish a consistent read-only copy of the warehouse to `target`, replaced atomically (copy beside it, then
   * rename). Queued like a write, and holds the file meanwhile, so no commit is ever half in the copy.
   */
  publishSnapshot(target: string): Promise<SnapshotResult>;
  /**
   * Publish the file to `WarehouseOptions.publish` now, if anything was written since the last publish (or the
   * published file is missing): CHECKPOINT, copy (reflink where possible), fsync, rename. null when nothing was
   * due, or without `publish`. Queued like a write: the copy is a state at a commit boundary.
   */
  publish(): Promise<SnapshotResult | null>;
  /** Write one Parquet file per table and view into `directory`, all from one read transaction. */
  exportParquet(directory: string): Promise<ExportedFile[]>;
  /**
   * The change feed: versions committed after `query.since` (a cursor, or a commit time), in commit order, with the
   * cursor to pass next time (see `docs/history.md`). Read-only, one read transaction.
   */
  readChanges(query: ChangeQuery): Promise<ChangeFeed>;
  /** The same changes written to a Parquet file (owner-only); how many, and the next cursor. */
  writeChangesParquet(query: ChangeQuery, file: string): Promise<{ rows: number; cursor: string; available: boolean }>;
  /** Every table and view of the main schema with its columns and what each holds (for `dbt-sources`). */
  catalog(): Promise<CatalogRelation[]>;
  /** The property policy `resource`'s stored data was written under (null: none recorded; see `applyPropertyPolicy`). */
  storedPropertyPolicy(resource: RecordResourceName): Promise<StoredPropertyPolicy | null>;
  /**
   * The properties stored for `resource`: its definitions (with `is_core`) and any other key of stored JSON
   * (`isCore` undefined). Scans the table and its history: for a change of policy, not every run.
   */
  storedProperties(resource: RecordResourceName): Promise<{ apiName: string; isCore: boolean | undefined }[]>;
  /**
   * Record a new property policy for `resource`, in one transaction: `purge` removed from every table (columns,
   * definitions, `_properties`, history, the resource's quarantine), views rebuilt, the walk's checkpoint and
   * watermark forgotten (the next walk is full). With anything purged, the file is then compacted (rewritten
   * without free blocks that could still hold old values).
   */
  applyPropertyPolicy(resource: RecordResourceName, applied: AppliedPolicy, purge: readonly string[]): Promise<PolicyPurge>;
  /** Release the file now, after the calls already queued (a writer's lingering handle included). */
  close(): Promise<void>;
}
