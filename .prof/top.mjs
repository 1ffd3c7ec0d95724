import { readFileSync, readdirSync } from 'node:fs';
const dir = process.argv[2] ?? '/tmp/cpuprof';
const f = readdirSync(dir).filter((x) => x.endsWith('.cpuprofile')).sort().pop();
const p = JSON.parse(readFileSync(`${dir}/${f}`));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map(); const dt = p.timeDeltas; let total = 0;
const counts = new Map();
p.samples.forEach((id, i) => { counts.set(id, (counts.get(id) ?? 0) + (dt[i] ?? 0)); total += dt[i] ?? 0; });
const parent = new Map(); for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const agg = new Map(); const incl = new Map();
for (const [id, t] of counts) {
  const n = byId.get(id); const key = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
  agg.set(key, (agg.get(key) ?? 0) + t);
  const seen = new Set(); let cur = id;
  while (cur !== undefined) { const m = byId.get(cur); const k = `${m.callFrame.functionName || '(anon)'} ${m.callFrame.url.split('/').slice(-2).join('/')}:${m.callFrame.lineNumber}`; if (!seen.has(k)) { incl.set(k, (incl.get(k) ?? 0) + t); seen.add(k); } cur = parent.get(cur); }
}
console.log('total s', (total / 1e6).toFixed(1));
console.log('--- self'); [...agg].sort((a, b) => b[1] - a[1]).slice(0, 30).forEach(([k, t]) => console.log((t / 1e6).toFixed(2).padStart(7), k));
console.log('--- inclusive'); [...incl].sort((a, b) => b[1] - a[1]).slice(0, 45).forEach(([k, t]) => console.log((t / 1e6).toFixed(2).padStart(7), k));
