import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createSimulator } from '../dist/src/simulator/index.js';
import { openWarehouse } from '../dist/src/warehouse/index.js';
import { loadConfig } from '../dist/src/config.js';
const N = Number(process.argv[2] ?? 300000);
const dir = await mkdtemp(join(tmpdir(), 'grow-'));
const sim = createSimulator({ seed: 42, size: { deals: N, companies: 20, contacts: 20, meetingLogs: 1, contactActivities: 1, users: 5 } });
const truth = sim.admin.truth();
const records = truth.records.deals;
const defaults = loadConfig({});
const warehouse = openWarehouse({ path: join(dir, 'w.duckdb'), logger: pino({ level: 'silent' }), lingerMs: defaults.lingerMs, memoryLimit: process.env.MEM ?? defaults.warehouseMemoryLimit });
await warehouse.ensureSchema();
await warehouse.applyPropertyDefinitions('deals', truth.properties.deals);
const B = 2000; let t0 = performance.now(); const start = t0;
let maxRss = 0;
for (let i = 0; i < records.length; i += B) {
  await warehouse.commitBatch('deals', { records: records.slice(i, i + B), checkpoint: { cursor: `b-${i}`, updatedAfter: null, startedAt: '2026-01-01T00:00:00Z', mode: 'full' } });
  maxRss = Math.max(maxRss, process.memoryUsage().rss);
  if ((i / B + 1) % 25 === 0) { const t = performance.now(); console.log(`${i + B} rows: ${((t - t0) / 25).toFixed(1)} ms/batch, rss ${(process.memoryUsage().rss/1e6).toFixed(0)} MB`); t0 = t; if (globalThis.__prof) { console.log('   stmts ms/batch', globalThis.__prof.map(x => (x/25).toFixed(1)).join(' ')); globalThis.__prof = globalThis.__prof.map(()=>0);} }
}
await warehouse.close();
console.log(`total ${(N / ((performance.now() - start) / 1000)).toFixed(0)} rows/s, maxRss ${(maxRss/1e6).toFixed(0)}`);
await rm(dir, { recursive: true, force: true });
