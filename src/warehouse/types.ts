import type { RecordResourceName, ResourceName } from '../core/resources.js';
import type {
  MeetingLogSummary,
  PropertyDefinition,
  ServiceRecord,
  ServiceUser,
  WalkCheckpoint,
  WalkMode,
} from '../core/types.js';
import type { ExportedFile } from './export.js';
import type { SnapshotResult } from './snapshot.js';

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
}

/** A batch of one or more pages, committed in one transaction with the checkpoint that follows them. */
export interface PageBatch {
  records: ServiceRecord[];
  /** Meeting logs only: the summaries of each log in `records`, replacing what was stored for it. */
  summaries?: Map<string, MeetingLogSummary[]>;
  /**
   * Where the walk stands after these records. `cursor: null` means the walk is complete. Absent for writes
   * that are not part of a walk (the summaries job re-fetching single views).
   */
  checkpoint?: WalkCheckpoint;
  /** Set when the walk is complete: the new watermark, stored in the same transaction. */
  completeWatermark?: string;
  /**
   * The `sync_state` row the checkpoint goes to. @defaultValue the resource name. A backfill uses its own
   * (`deals#backfill`) so it never clobbers the incremental walk's checkpoint or watermark.
   */
  stateKey?: string;
  /** Set when the batch belongs to a reconcile sweep (see `SweepBatch`). */
  sweep?: SweepBatch;
  /**
   * An earlier commit of the same walk, still in flight: this batch is written only if that one succeeded, so a
   * checkpoint never moves past pages that failed to commit. Commits run in call order, so it has settled by
   * the time this batch's turn comes; the batch is encoded meanwhile.
   */
  after?: Promise<unknown> | undefined;
}

/**
 * A reconcile sweep's batch: only rows whose content changed are written, every listed id is recorded as seen
 * (in the same transaction), and the completing batch marks the rows never seen as deleted.
 */
export interface SweepBatch {
  /** Names the sweep's seen-id set (`reconcile_seen.sweep_key`), e.g. `deals#reconcile`. */
  key: string;
  /** Server time the sweep started: rows updated at or after it are never marked deleted by this sweep. */
  startedAt: string;
  /** The first batch of a sweep that did not resume: ids seen by an abandoned sweep are forgotten first. */
  fresh: boolean;
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
/** `abandoned`: its process ended without recording an end (see `RunOwner`). */
export type RunOutcome = 'running' | 'succeeded' | 'failed' | 'interrupted' | 'skipped' | 'abandoned';

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
}

export interface RunRow extends RunStart, Partial<RunFinish> {
  runId: string;
  outcome: RunOutcome;
}

export interface WarehouseOptions {
  /** The DuckDB file. Its directory is created when missing. */
  path: string;
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
   * DuckDB's `memory_limit` for this process's sessions (e.g. `200MB`): past it, DuckDB evicts cached blocks
   * and spills to temporary files rather than growing. @defaultValue 256MB, raised for a batch into a table of
   * many property columns or holding a record over 16 MiB (`automaticMemoryLimit`)
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
  readonly path: string;
  /** Create the fixed tables when missing. Idempotent. */
  ensureSchema(): Promise<void>;
  /** Record the definitions and evolve the resource table (new property, new column). Returns the column plan. */
  applyPropertyDefinitions(resource: RecordResourceName, definitions: PropertyDefinition[]): Promise<ColumnPlan[]>;
  /** Upsert the batch's records (latest `updated_at` wins within the batch) and store its checkpoint, atomically. */
  commitBatch(resource: RecordResourceName, batch: PageBatch): Promise<CommitResult>;
  /** Replace the users table with a complete listing, in one transaction; users no longer listed get `_deleted_at`. */
  replaceUsers(users: ServiceUser[], completedAt: string): Promise<{ written: number }>;
  /** Stored `updated_at` (ISO, full precision) of the given ids, for those present. */
  storedUpdatedAt(resource: RecordResourceName, ids: string[]): Promise<Map<string, string>>;
  /**
   * Meeting logs (not marked deleted) created at or after `createdAfter` whose stored summaries are empty or not
   * all in `finalStatuses`: id → stored `updated_at` (ISO, full precision), newest logs first.
   */
  logsAwaitingSummaries(createdAfter: string, finalStatuses: readonly string[]): Promise<Map<string, string>>;
  /** The state of a resource's walk, or of another walk of it kept under `stateKey` (a backfill). */
  readState(resource: ResourceName, stateKey?: string): Promise<ResourceState>;
  /** Forget an interrupted walk (for `--full` after an incremental walk was cut, and the like). */
  clearWalk(resource: ResourceName): Promise<void>;
  startRun(run: RunStart): Promise<string>;
  finishRun(runId: string, finish: RunFinish): Promise<void>;
  recentRuns(limit: number): Promise<RunRow[]>;
  /** Row counts of the resource tables (rows not marked deleted). */
  tableCounts(): Promise<Record<string, number>>;
  /** Run a read-only query (used by `status`, the demo, and tests). Values come back as JSON-friendly JS. */
  query(sql: string): Promise<Record<string, unknown>[]>;
  /**
   * Publish a consistent read-only copy of the warehouse to `target`, replaced atomically (copy beside it, then
   * rename). Queued like a write, and holds the file meanwhile, so no commit is ever half in the copy.
   */
  publishSnapshot(target: string): Promise<SnapshotResult>;
  /** Write one Parquet file per table and view into `directory`, all from one read transaction. */
  exportParquet(directory: string): Promise<ExportedFile[]>;
  /** Release the file now, after the calls already queued (a writer's lingering handle included). */
  close(): Promise<void>;
}
