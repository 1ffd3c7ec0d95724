import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createSimulator } from '../dist/src/simulator/index.js';
import { openWarehouse } from '../dist/src/warehouse/index.js';
import { microsToIso, parseInstantMicros } from '../dist/src/core/time.js';
const N = Number(process.argv[2] ?? 200000);
const dir = await mkdtemp(join(tmpdir(), 'oom-'));
const sim = createSimulator({ seed: 42, size: { deals: N, companies: 20, contacts: 20, meetingLogs: 1, contactActivities: 1, users: 5 } });
const truth = sim.admin.truth();
const records = truth.records.deals;
const w = openWarehouse({ path: join(dir, 'w.duckdb'), logger: pino({ level: 'silent' }), lingerMs: 500, memoryLimit: process.env.MEM ?? '128MB' });
await w.ensureSchema(); await w.applyPropertyDefinitions('deals', truth.properties.deals);
const touched = records.map((r) => ({ ...r, updated_at: microsToIso(parseInstantMicros(r.updated_at) + 1n), properties: { ...r.properties, amount: 1 } }));
for (const [phase, rows] of [['first', records], ['upsert', touched]]) {
  const t = performance.now();
  for (let i = 0; i < rows.length; i += 2000) {
    try { await w.commitBatch('deals', { records: rows.slice(i, i + 2000), checkpoint: { cursor: `b${i}`, updatedAfter: null, startedAt: '2026-01-01T00:00:00Z', mode: 'full' } }); }
    catch (e) { console.log(phase, 'failed at', i, e.message.slice(0, 200)); process.exit(1); }
  }
  await w.close();
  console.log(phase, 'ok', ((performance.now() - t) / 1000).toFixed(1), 's');
}
