import { totalmem } from 'node:os';

/**
 * DuckDB's memory limit when the operator sets none (`SALESYNC_DUCKDB_MEMORY` unset): 96 MB, raised for a
 * batch that needs more. What a commit needs grows with its table's width and its largest record, not with
 * the number of rows: DuckDB holds a block per column of every table a batch is appended to (its stage and the
 * record table itself), and `read_json` buffers a multiple of the largest object it may meet. Measured on 2
 * cores with `npm run bench:wide` (batches of 2000 records written, then replaced: 256MB held 200 property
 * columns but not 250, 671MB not 600; this rule held 200, 250, 400 and 600) and, ad hoc, batches of one record
 * whose NDJSON line was 18, 36, 72 and 144 MB long (256MB held the first only; 300MB, 540MB and 1100MB held the
 * others).
 */

/**
 * The limit for narrow tables and ordinary records, and the least ever set automatically. DuckDB fills its limit
 * with cached blocks whatever the batch needs, so this is memory a sync holds: 96 MB is what the rule below gives
 * a 30-column table, and narrow commits need no more (the memory bench commits 2M records at it in the time they
 * took at 128 MB, the peak about 30 MB lower).
 */
export const BASE_MEMORY_LIMIT_MB = 96;
const FIXED_MB = 64;
const PER_COLUMN_MB = 17 / 16;
/**
 * The limit a warehouse opens at, before a batch sets its own: a WAL left by a wide table's commits is replayed
 * when the file opens (a 600-column table's replay ran out of 96 MB), and the first commit lowers it. A replay
 * that runs out of it is tried again at the reads' limit (`OpenOptions.replayMemoryLimit`).
 */
export const OPEN_MEMORY_LIMIT_MB = 128;
/**
 * Past a thousand columns a checkpoint needs more than a commit: at 96 + 1 MB per column a 2,007-column table's
 * checkpoint failed (FATAL, every block pinned) where 2250MB held; 1,500 columns held at the linear rule.
 */
const WIDE_FROM_COLUMNS = 1000;
const PER_WIDE_COLUMN_MB = 0.25;
/**
 * A record past `read_json`'s default `maximum_object_size` (16 MB) gets the rule the huge records above were
 * measured at: 96 MB, 1 MB a column and 9 MB for each MB of object size past the default.
 */
const DEFAULT_OBJECT_MB = 16;
const HUGE_RECORD_FIXED_MB = 96;
const PER_OBJECT_MB = 9;

/**
 * The least a session that reads whole tables gets (`query`, readers of the published file, exports): at 128 MB
 * an export of a 1M-record warehouse ran out of memory where a sync completed, and so did `SELECT * FROM
 * deals_view LIMIT 10` on a 2,000-property table, which 256 MB holds.
 */
export const READ_MEMORY_LIMIT_MB = 256;

/**
 * The limit of a session that only reads, unless SALESYNC_DUCKDB_MEMORY sets one: half the memory this process may
 * use (a cgroup's limit, else the machine's), and at least READ_MEMORY_LIMIT_MB. An analyst's read computes over
 * whole histories, as DuckDB's own shell does at its default (80%): at 256 MB the change feed of a 30,000-deal
 * warehouse with one update each, and so its export, ran out of memory (a window over every version's properties).
 * A limit is a cap, not an allocation: a read that needs little uses little.
 */
export function readMemoryLimitMb(totalBytes: number = availableMemoryBytes()): number {
  return Math.max(READ_MEMORY_LIMIT_MB, Math.floor(totalBytes / 2 / 2 ** 20));
}

function availableMemoryBytes(): number {
  const constrained = process.constrainedMemory?.() ?? 0;
  return constrained > 0 ? Math.min(totalmem(), constrained) : totalmem();
}

/**
 * DuckDB's `memory_limit` for a commit into a table of `columns` columns whose NDJSON lines may be up to
 * `objectBytes` long (the `maximum_object_size` staging passes to `read_json`), e.g. `'96MB'` or `'348MB'`;
 * never below `floorMb`.
 */
export function automaticMemoryLimit(columns: number, objectBytes = 0, floorMb = BASE_MEMORY_LIMIT_MB): string {
  const objectMb = objectBytes / 2 ** 20;
  const forWidth = FIXED_MB + PER_COLUMN_MB * columns + PER_WIDE_COLUMN_MB * Math.max(0, columns - WIDE_FROM_COLUMNS);
  const forObject = objectMb > DEFAULT_OBJECT_MB ? HUGE_RECORD_FIXED_MB + columns + PER_OBJECT_MB * (objectMb - DEFAULT_OBJECT_MB) : 0;
  return `${Math.max(floorMb, Math.ceil(Math.max(forWidth, forObject)))}MB`;
}

/** DuckDB's units: KB, MB, … are powers of 1000, KiB, MiB, … of 1024. */
const UNIT_BYTES: Record<string, number> = {
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** A `memory_limit` such as `'96MB'` or `'1.5GiB'` (the forms SALESYNC_DUCKDB_MEMORY takes) in DuckDB's MB. */
export function memoryLimitMb(limit: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]+)$/i.exec(limit.trim());
  const unit = m ? UNIT_BYTES[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error(`not a memory limit DuckDB reads: "${limit}" (e.g. 96MB or 1GB)`);
  return (Number(m[1]) * unit) / 1e6;
}
