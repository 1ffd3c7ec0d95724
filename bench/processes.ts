import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DEFAULT_KEYS, type SimulatorOptions } from '../src/simulator/index.js';
import { duckdbAllocatorConf } from '../src/warehouse/allocator-conf.js';
import type { DuckdbBatchedSpec } from './duckdb-batched.js';
import type { LaneWalk } from '../devtools/walk-schedule.js';
import type { Fingerprint } from '../devtools/mirror-fingerprint.js';

const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));

export interface ChildSimulator {
  url: string;
  /** Each record table's fingerprint of the service's truth at the start (asked for with `fingerprint`). */
  fingerprints?: Record<string, Fingerprint>;
  stop(): Promise<void>;
}

/** Start bench/simulator-child in its own process and wait for its address. */
export async function startChildSimulator(options: SimulatorOptions, fingerprint = false): Promise<ChildSimulator> {
  const args = [
    '--max-old-space-size=8192',
    here('./simulator-child.js'),
    JSON.stringify(options),
    ...(fingerprint ? ['fingerprint'] : []),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const { url, fingerprints } = await new Promise<{ url: string; fingerprints?: Record<string, Fingerprint> }>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
    lines.once('line', (line) => resolve(JSON.parse(line) as { url: string; fingerprints?: Record<string, Fingerprint> }));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url,
    ...(fingerprints === undefined ? {} : { fingerprints }),
    // Idempotent: stopping a stopped simulator resolves at once.
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

export interface SyncChildResult {
  ok: boolean;
  requests: number;
  /** Each resource's walk, in the order the sync starts them (meeting logs' with their summary reads). */
  walks: LaneWalk[];
  records: number;
  elapsedMs: number;
  maxRssMb: number;
  /** Peak JS heap used, sampled every 100 ms. */
  maxHeapMb: number;
  /** The largest old space left right after a full collection: what the sync's JS keeps alive. */
  liveOldSpaceMb?: number;
  /** What the RSS was made of at its highest 100 ms sample. */
  atPeak?: PeakParts | null;
  errors: string[];
}

/** A sample of a process's memory, in MB: its RSS, of it the mapped files (null: unknown), V8's heap, external memory. */
export interface PeakParts {
  rssMb: number;
  fileMb: number | null;
  v8HeapMb: number;
  externalMb: number;
}

/** Process settings a sync child inherits from the bench's environment beside SALESYNC_*. */
const PASSED_THROUGH = new Set(['NODE_OPTIONS', 'GLIBC_TUNABLES']);

/** Run bench/sync-child against `url` into `warehousePath` with extra environment. */
export function runChildSync(url: string, warehousePath: string, env: Record<string, string> = {}): Promise<SyncChildResult> {
  return runJsonChild<SyncChildResult>('sync-child', [], {
    PATH: process.env.PATH ?? '',
    SALES_API_BASE_URL: url,
    SALES_API_KEY: DEFAULT_KEYS.read,
    WAREHOUSE_PATH: warehousePath,
    // Settings under test pass through (e.g. SALESYNC_DUCKDB_MEMORY=256MB npm run bench), Node's and glibc's own as
    // well (NODE_OPTIONS=--max-old-space-size=160: a heap ceiling as docs/configuration.md describes it).
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('SALESYNC_') || PASSED_THROUGH.has(name))),
    ...duckdbAllocatorEnv(),
    ...env,
  });
}

/** DuckDB's allocator for a child process, as the CLI sets it before a command loads DuckDB. */
export function duckdbAllocatorEnv(): { DUCKDB_JE_MALLOC_CONF: string } {
  return { DUCKDB_JE_MALLOC_CONF: duckdbAllocatorConf(process.env.DUCKDB_JE_MALLOC_CONF) };
}

/** Run bench/duckdb-batched-child with `spec` (written to `specFile`): DuckDB alone, its peak RSS. */
export async function runDuckdbBatchedChild(spec: DuckdbBatchedSpec, specFile: string): Promise<{ maxRssMb: number }> {
  await writeFile(specFile, JSON.stringify(spec));
  return runJsonChild<{ maxRssMb: number }>('duckdb-batched-child', [specFile], {
    PATH: process.env.PATH ?? '',
    ...duckdbAllocatorEnv(),
  });
}

/** Run bench/<name>.js in a process of its own; its last stdout line is its JSON result. */
async function runJsonChild<T>(name: string, args: string[], env: NodeJS.ProcessEnv): Promise<T> {
  const child = spawn(process.execPath, [here(`./${name}.js`), ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${name} exited with ${code}`);
  return JSON.parse(out.trim().split('\n').pop()!) as T;
}
