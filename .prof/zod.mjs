import { createSimulator } from '../dist/src/simulator/index.js';
import { recordListSchema } from '../dist/src/api/schemas.js';
const sim = createSimulator({ seed: 1, size: { deals: 2000 } });
const recs = sim.admin.truth().records.deals.slice(0, 200);
const body = JSON.stringify({ results: recs, paging: { next: { after: 'x' } } });
console.log('page bytes', body.length, 'props/record', Object.keys(recs[0].properties).length);
for (let round = 0; round < 3; round++) {
  let t = performance.now(); for (let i = 0; i < 200; i++) JSON.parse(body); const parse = (performance.now() - t) / 200;
  const obj = JSON.parse(body);
  t = performance.now(); for (let i = 0; i < 200; i++) recordListSchema.safeParse(JSON.parse(body)); const both = (performance.now() - t) / 200;
  console.log(`parse ${parse.toFixed(2)} ms, parse+zod ${both.toFixed(2)} ms per page`);
}
