import type { RecordResourceName, ResourceName } from '../core/resources.js';
import type {
  MeetingLogSummary,
  PropertyDefinition,
  ServiceRecord,
  ServiceUser,
  WalkCheckpoint,
  WalkMode,
} from '../core/types.js';

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
  /** Where the walk stands after these records. `cursor: null` means the walk is complete. */
  checkpoint: WalkCheckpoint;
  /** Set when the walk is complete: the new watermark, stored in the same transaction. */
  completeWatermark?: string;
}

export type RunOutcome = 'running' | 'succeeded' | 'failed' | 'interrupted' | 'skipped';

export interface RunStart {
  resource: ResourceName;
  mode: WalkMode | 'refresh' | 'backfill' | 'reconcile';
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
  logger?: import('pino').Logger;
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
  commitBatch(resource: RecordResourceName, batch: PageBatch): Promise<{ written: number }>;
  /** Replace the users table with a complete listing, in one transaction; users no longer listed get `_deleted_at`. */
  replaceUsers(users: ServiceUser[], completedAt: string): Promise<{ written: number }>;
  /** Stored `updated_at` (ISO, full precision) of the given ids, for those present. */
  storedUpdatedAt(resource: RecordResourceName, ids: string[]): Promise<Map<string, string>>;
  readState(resource: ResourceName): Promise<ResourceState>;
  /** Forget an interrupted walk (for `--full` after an incremental walk was cut, and the like). */
  clearWalk(resource: ResourceName): Promise<void>;
  startRun(run: RunStart): Promise<string>;
  finishRun(runId: string, finish: RunFinish): Promise<void>;
  recentRuns(limit: number): Promise<RunRow[]>;
  /** Row counts of the resource tables (rows not marked deleted). */
  tableCounts(): Promise<Record<string, number>>;
  /** Run a read-only query (used by `status`, the demo, and tests). Values come back as JSON-friendly JS. */
  query(sql: string): Promise<Record<string, unknown>[]>;
}
