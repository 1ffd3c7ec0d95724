import { benchMemory } from '../dist/bench/sync-cost.js';
const n = Number(process.argv[2] ?? 100000);
const r = await benchMemory(n);
console.log(JSON.stringify({ n, env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('SALESYNC_'))), rss: Math.round(r.maxRssMb), heap: Math.round(r.maxHeapMb), s: (r.elapsedMs / 1000).toFixed(1) }));
