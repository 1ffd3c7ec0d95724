/** The DuckDB warehouse: the only module that knows DuckDB. */
export { openWarehouse, DEFAULT_LOCK_TIMEOUT_MS } from './duckdb-warehouse.js';
export { RecordList } from './record-buffer.js';
export type {
  ColumnPlan,
  CommitResult,
  PageBatch,
  PreparedBatch,
  RecordBuffer,
  ResourceState,
  RunFinish,
  RunOutcome,
  RunOwner,
  RunRow,
  RunStart,
  SummariesDue,
  SweepBatch,
  SweepCandidates,
  PublishOptions,
  Warehouse,
  WarehouseOptions,
} from './types.js';
export {
  writerPathFor,
  publishedFileStatus,
  assertReadableIfPresent,
  warehouseMissing,
  firstSyncWriting,
  warehouseUnreadable,
  makeDirectories,
  WRITER_DIRECTORY,
} from './files.js';
export { DEFAULT_PUBLISH_MODE } from './snapshot.js';
export { WRITER_ROW_GROUP_SIZE } from './connection.js';
export { quoteIdentifier, assignColumnNames, SYSTEM_COLUMNS, type ColumnAssignment } from './identifiers.js';
export { sqlTypeFor, type SqlType } from './column-types.js';
export type { SnapshotResult } from './snapshot.js';
export type { ExportedFile } from './types.js';
export type { CatalogColumn, CatalogRelation } from './dbt-sources.js';
// dbtSourcesYaml is imported from its own module: exported here, every command would load the YAML library.
export type { DbtSourcesOptions } from './dbt-sources-yaml.js';
export { resourceViewName, DEAL_STAGE_HISTORY_VIEW } from './views.js';
export { historyTableName } from './history-names.js';
export { type VersionSource } from './history.js';
export { historyViewName, CHANGES_VIEW } from './history-views.js';
export type { ChangeFeed, ChangeQuery, ChangeRow, ChangeSince } from './types.js';
export { parseInstantMicros, microsToIso, canonicalInstant } from '../core/time.js';
