/** DuckDB values → JSON-friendly JS for `query()` and internal reads. */
import {
  DuckDBArrayValue,
  DuckDBDateValue,
  DuckDBDecimalValue,
  DuckDBListValue,
  DuckDBMapValue,
  DuckDBStructValue,
  DuckDBTimestampTZValue,
  DuckDBTimestampValue,
  type DuckDBValue,
} from '@duckdb/node-api';
import { microsToIso } from '../core/time.js';

/**
 * BIGINT → number when it is a safe integer (else its decimal string); TIMESTAMPTZ → ISO UTC with
 * microseconds; TIMESTAMP → the same without `Z`; DATE → `YYYY-MM-DD`; lists and structs recursively;
 * anything else → its string form.
 */
export function toJsonFriendly(value: DuckDBValue): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') {
    return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(value) : value.toString();
  }
  if (value instanceof DuckDBTimestampTZValue) return value.isFinite ? microsToIso(value.micros) : value.toString();
  if (value instanceof DuckDBTimestampValue) return value.isFinite ? microsToIso(value.micros).slice(0, -1) : value.toString();
  if (value instanceof DuckDBDateValue) return value.toString();
  if (value instanceof DuckDBDecimalValue) return value.toDouble();
  if (value instanceof DuckDBListValue || value instanceof DuckDBArrayValue) return value.items.map(toJsonFriendly);
  if (value instanceof DuckDBStructValue) {
    return Object.fromEntries(Object.entries(value.entries).map(([k, v]) => [k, toJsonFriendly(v)]));
  }
  if (value instanceof DuckDBMapValue) return value.entries.map((e) => ({ key: toJsonFriendly(e.key), value: toJsonFriendly(e.value) }));
  return String(value);
}

export function rowToJsonFriendly(row: Record<string, DuckDBValue>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, toJsonFriendly(v)]));
}
