import { createSimulator } from '../dist/src/simulator/index.js';
import { recordEncoder, contentHash, recordCells } from '../dist/src/warehouse/rows.js';
import { planFromAssignments } from '../dist/src/warehouse/schema.js';
import { canonicalInstant } from '../dist/src/core/time.js';
const sim = createSimulator({ seed: 1, size: { deals: 20000 } });
const recs = JSON.parse(JSON.stringify(sim.admin.truth().records.deals));
const defs = sim.admin.truth().properties.deals;
const plan = defs.map((d) => ({ apiName: d.api_name, columnName: d.api_name, sqlType: d.property_type === 'number' ? 'DOUBLE' : d.property_type === 'boolean' ? 'BOOLEAN' : d.property_type === 'date' ? 'DATE' : d.property_type === 'datetime' ? 'TIMESTAMPTZ' : 'VARCHAR' }));
console.log('plan', plan.length, 'props', Object.keys(recs[0].properties).length);
const enc = recordEncoder(plan, new Date().toISOString());
const time = (name, f) => { for (let r = 0; r < 2; r++) { const t = performance.now(); for (const x of recs) f(x); const us = (performance.now() - t) * 1000 / recs.length; if (r) console.log(name.padEnd(14), us.toFixed(2), 'µs/record'); } };
time('encode', enc);
time('cells', (x) => recordCells(x, plan, '2026-01-01T00:00:00.000000Z'));
time('hash', (x) => contentHash(x));
time('instants', (x) => { canonicalInstant(x.created_at); canonicalInstant(x.updated_at); });
time('stringify', (x) => JSON.stringify(x));
const n = plan.length + 7;
const keys = Array.from({ length: n }, (_, i) => `c${i}`);
const cellsArr = recs.map((x) => recordCells(x, plan, '2026-01-01T00:00:00.000000Z'));
let k = 0;
const dyn = (cells) => { const row = {}; for (let i = 0; i < keys.length; i++) row[keys[i]] = cells[i] ?? null; return JSON.stringify(row); };
const lit = new Function('c', `return JSON.stringify({${keys.map((key, i) => `${key}: c[${i}] ?? null`).join(', ')}});`);
const arr = (cells) => JSON.stringify(cells);
for (const [name, f] of [['dyn', dyn], ['literal', lit], ['array', arr], ['dyn', dyn], ['literal', lit], ['array', arr]]) {
  const t = performance.now(); for (const c of cellsArr) f(c); console.log(name.padEnd(10), ((performance.now() - t) * 1000 / cellsArr.length).toFixed(2), 'µs/row');
}
console.log(lit(cellsArr[0]) === dyn(cellsArr[0]));
