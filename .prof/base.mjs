const m0 = process.memoryUsage().rss;
await import('../dist/src/sync/index.js');
await import('../dist/src/config.js');
const m1 = process.memoryUsage().rss;
const { DuckDBInstance } = await import('@duckdb/node-api');
const i = await DuckDBInstance.create(':memory:'); const c = await i.connect(); await c.run('select 1');
const m2 = process.memoryUsage().rss;
console.log((m0/2**20).toFixed(0), (m1/2**20).toFixed(0), (m2/2**20).toFixed(0), JSON.stringify(Object.fromEntries(Object.entries(process.memoryUsage()).map(([k,v])=>[k,Math.round(v/2**20)]))));
