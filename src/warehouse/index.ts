/** The DuckDB warehouse: the only module that knows DuckDB. */
export { openWarehouse, DEFAULT_LOCK_TIMEOUT_MS } from './duckdb-warehouse.js';
export type {
  ColumnPlan,
  PageBatch,
  ResourceState,
  RunFinish,
  RunOutcome,
  RunRow,
  RunStart,
  Warehouse,
  WarehouseOptions,
} from './types.js';
export { quoteIdentifier, assignColumnNames, SYSTEM_COLUMNS, type ColumnAssignment } from './identifiers.js';
export { sqlTypeFor, type SqlType } from './column-types.js';
export { parseInstantMicros, microsToIso, canonicalInstant } from '../core/time.js';
