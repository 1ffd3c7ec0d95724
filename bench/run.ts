// npm run bench: every figure as a ratio against a limit, measured in one run on this machine.
// Flags: --scale <f> multiplies every data size (e.g. 0.1 for a quick look); --only <name,...> runs some sections
// (efficiency, limiter, load, memory, e2e, publish, wide); --help says so. A flag it cannot run with exits 2
// (devtools/bench-options.ts).
// DuckDB's allocator as the CLI sets it, before a section loads DuckDB (its allocator reads the conf once, at load):
// the sections run in this process, and its children inherit it.
import { duckdbAllocatorConf } from '../src/warehouse/allocator-conf.js';

process.env.DUCKDB_JE_MALLOC_CONF = duckdbAllocatorConf(process.env.DUCKDB_JE_MALLOC_CONF);
await import('./sections.js');
