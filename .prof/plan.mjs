import { DuckDBInstance } from '@duckdb/node-api';
import { rmSync } from 'node:fs';
rmSync('/tmp/plan.duckdb', { force: true }); rmSync('/tmp/plan.duckdb.wal', { force: true });
const i = await DuckDBInstance.create('/tmp/plan.duckdb', { memory_limit: '256MB' });
const c = await i.connect();
const N = Number(process.argv[2] ?? 300000);
await c.run(`create table t as select 'id' || lpad(i::varchar, 16, '0') id, now() - interval (i) second created_at, now() - interval (i) second updated_at,
  ('{"name":"deal ' || i || '","amount":' || i || ',"stage":"closedwon","note":"' || repeat('x', 300) || '"}')::JSON _properties,
  sha256(i::varchar) _content_hash, NULL::TIMESTAMPTZ _deleted_at, i::double amount, 'n' || i as name from range(${N}) r(i)`);
await c.run('checkpoint');
await c.run(`create temp table s as select 'id' || lpad((i*150)::varchar, 16, '0') id, now() updated_at, now() created_at, '{"a":1}'::JSON _properties, sha256((i*7)::varchar) _content_hash from range(2000) r(i)`);
const q1 = `SELECT s.*, t.id IS NOT NULL AS _stored, t.updated_at AS _stored_updated_at,
  coalesce(t.updated_at > s.updated_at, false) AS _older,
  coalesce(t._content_hash = s._content_hash AND t._deleted_at IS NULL, false) AS _same,
  t.id IS NULL OR t._deleted_at IS NOT NULL OR (t._content_hash IS NOT NULL AND t._content_hash <> s._content_hash)
   OR (t._content_hash IS NULL AND (CAST(t._properties AS VARCHAR) IS DISTINCT FROM CAST(s._properties AS VARCHAR) OR t.updated_at IS DISTINCT FROM s.updated_at OR t.created_at IS DISTINCT FROM s.created_at)) AS _changed
  FROM s LEFT JOIN t ON t.id = s.id`;
const q2 = `SELECT s.*, t.id IS NOT NULL AS _stored, t.updated_at AS _stored_updated_at,
  coalesce(t.updated_at > s.updated_at, false) AS _older,
  coalesce(t._content_hash = s._content_hash AND t._deleted_at IS NULL, false) AS _same,
  t.id IS NULL OR t._deleted_at IS NOT NULL OR t._content_hash IS DISTINCT FROM s._content_hash AS _changed
  FROM s LEFT JOIN t ON t.id = s.id`;
for (const [name, q] of [['legacy', q1], ['narrow', q2], ['legacy', q1], ['narrow', q2]]) {
  const t0 = performance.now();
  for (let k = 0; k < 10; k++) await c.run(`create or replace temp table st as ${q}`);
  console.log(name, ((performance.now() - t0) / 10).toFixed(1), 'ms');
}
const r = await c.runAndReadAll(`explain analyze create or replace temp table st as ${q1}`);
console.log(r.getRows().map(x => x[1]).join('\n').split('\n').filter(l => /TABLE_SCAN|Projections|─ *t *─|Rows|Table|#|_properties|id$|Time|HASH_JOIN/.test(l)).slice(0,60).join('\n'));
await c.run(`create or replace temp table st as select *, (_stored AND false) as _legacy from (${q2})`);
const upd = `UPDATE st SET _changed = l._changed FROM (SELECT s.id, (CAST(t._properties AS VARCHAR) IS DISTINCT FROM CAST(s._properties AS VARCHAR) OR t.updated_at IS DISTINCT FROM s.updated_at) AS _changed FROM (SELECT * FROM st WHERE _legacy) s JOIN t ON t.id = s.id) l WHERE st.id = l.id`;
for (let k = 0; k < 3; k++) { const t0 = performance.now(); for (let j = 0; j < 10; j++) await c.run(upd); console.log('legacy-update (none)', ((performance.now() - t0) / 10).toFixed(2), 'ms'); }
await c.run(`update st set _legacy = true where id in (select id from st where _stored limit 5)`);
for (let k = 0; k < 2; k++) { const t0 = performance.now(); for (let j = 0; j < 10; j++) await c.run(upd); console.log('legacy-update (5)', ((performance.now() - t0) / 10).toFixed(2), 'ms'); }
