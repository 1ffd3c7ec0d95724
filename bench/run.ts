// npm run bench: every figure as a ratio against a limit, measured in one run on this machine.
// Flags (--scale, --only): `--help`, and devtools/bench-options.ts.
// DuckDB's allocator as the CLI sets it, before a section loads DuckDB (its allocator reads the conf once, at load):
// the sections run in this process, and its children inherit it.
import { duckdbAllocatorConf } from '../src/warehouse/allocator-conf.js';
import { limitHeapGrowth } from '../src/heap-growth.js';

process.env.DUCKDB_JE_MALLOC_CONF = duckdbAllocatorConf(process.env.DUCKDB_JE_MALLOC_CONF);
// As the CLI sets it, for the sections run in this process (the load section's commit path).
limitHeapGrowth();
await import('./sections.js');
