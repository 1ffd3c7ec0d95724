/**
 * How DuckDB's allocator (its own jemalloc, separate from Node's) gives memory back. It reads
 * `DUCKDB_JE_MALLOC_CONF` once, when `@duckdb/node-api` loads, so a process sets it before anything imports DuckDB.
 *
 * DuckDB's build keeps freed pages for a second, then hands them back with MADV_FREE ("muzzy" pages), which Linux
 * goes on counting in the process's RSS until it runs short: a sync's commits free tens of MB each, so its RSS sat
 * far above what DuckDB held. Freed pages go back with MADV_DONTNEED after 100 ms instead (`npm run bench -- --only
 * memory`: docs/performance.md has the runs).
 */
export const DUCKDB_ALLOCATOR_CONF = 'dirty_decay_ms:100,muzzy_decay_ms:0';

/**
 * The conf a process runs with: ours, then the operator's own `DUCKDB_JE_MALLOC_CONF` (jemalloc keeps a key's last
 * value). A conf that already starts with ours (a child of a process that set it) is kept as it is.
 */
export function duckdbAllocatorConf(operatorConf: string | undefined): string {
  const own = operatorConf?.trim();
  if (!own || own === DUCKDB_ALLOCATOR_CONF) return DUCKDB_ALLOCATOR_CONF;
  return own.startsWith(`${DUCKDB_ALLOCATOR_CONF},`) ? own : `${DUCKDB_ALLOCATOR_CONF},${own}`;
}
