// DuckDB alone in its own process (see duckdb-batched.ts): the peak RSS of loading the rows a sync wrote, batch
// by batch with history, at the warehouse's settings. Reads its spec from the JSON file argv[2]; prints one JSON line.
import { readFileSync } from 'node:fs';
import { openWriterDatabase, WRITER_SETTINGS } from '../src/warehouse/connection.js';
import { createBatchedTables, loadBatched, type DuckdbBatchedSpec } from './duckdb-batched.js';

const spec = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as DuckdbBatchedSpec;
// Opened as the writer opens the warehouse (one thread, jemalloc's background thread, its row group size): the
// floor must be measured as the warehouse runs.
const { instance, connection } = await openWriterDatabase(spec.path, { ...WRITER_SETTINGS, memory_limit: spec.memoryLimit });
await connection.run(`SET checkpoint_threshold = '${spec.checkpointThreshold}'`);
await createBatchedTables(connection, spec.tables);
await loadBatched(connection, spec.tables, true);
// Closed as the warehouse closes: the last checkpoint counts too.
await connection.run('CHECKPOINT');
connection.closeSync();
instance.closeSync();
process.stdout.write(
  // resourceUsage().maxRSS is in kilobytes.
  `${JSON.stringify({ maxRssMb: process.resourceUsage().maxRSS / 1024 })}\n`,
);
