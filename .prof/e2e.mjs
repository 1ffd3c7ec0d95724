// node .prof/e2e.mjs <records> <latency> [cpuprof]
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChildSimulator } from '../dist/bench/processes.js';
import { spreadSize } from '../dist/bench/sync-cost.js';
const records = Number(process.argv[2] ?? 200000), latencyMs = Number(process.argv[3] ?? 50), prof = process.argv[4] === 'prof';
const keys = Array.from({ length: 5 }, (_, i) => `sk_Bench${String(i).padStart(2, '0')}${'x'.repeat(40)}`);
const dir = await mkdtemp(join(tmpdir(), 'e2e-'));
const sim = await startChildSimulator({ seed: 13, size: spreadSize(records), perKeyPerMinute: 1000, perOrgPerMinute: 5000, keys: keys.map((key) => ({ key, role: 'read' })), faults: { latencyMs } });
const args = [...(prof ? ['--cpu-prof', '--cpu-prof-dir=/tmp/cpuprof'] : []), 'dist/bench/sync-child.js'];
const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH, SALES_API_BASE_URL: sim.url, SALES_API_KEY: keys.join(','), WAREHOUSE_PATH: join(dir, 'w.duckdb'), SALES_API_RATE_LIMIT: '1000', SALES_API_ORG_RATE_LIMIT: '5000', SALESYNC_CONCURRENCY: '3', ...Object.fromEntries(Object.entries(process.env).filter(([n]) => n.startsWith('SALESYNC_') || n === 'MALLOC_ARENA_MAX')) }, stdio: ['ignore', 'pipe', 'inherit'] });
let out = ''; child.stdout.on('data', (d) => (out += d));
await new Promise((r) => child.once('exit', r));
const res = JSON.parse(out.trim().split('\n').pop());
const bound = Math.min(3 / (latencyMs / 1000), 5000 / 60);
console.log(JSON.stringify({ ...res, ratio: (res.requests / (res.elapsedMs / 1000) / bound).toFixed(3) }));
await sim.stop(); await rm(dir, { recursive: true, force: true });
