// npm run bench: every figure as a ratio against a limit, measured in one run on this machine.
// Flags (--scale, --only): `--help`, and devtools/bench-options.ts.
// DuckDB's allocator as the CLI sets it, before a section loads DuckDB (its allocator reads the conf once, at load):
// the sections run in this process, and its children inherit it.
import { duckdbAllocatorConf } from '../src/warehouse/allocator-conf.js';

process.env.DUCKDB_JE_MALLOC_CONF = duckdbAllocatorConf(process.env.DUCKDB_JE_MALLOC_CONF);
await import('./sections.js');
