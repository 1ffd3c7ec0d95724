import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config.js';
import { projectRoot } from '../../src/core/paths.js';
import { checkDemoTarget, demoMarkerPath, runDemo, type DemoResult } from '../../src/demo/run-demo.js';
import { createWarehouse } from '../../src/sync/index.js';

/** The SQL statements of the analysts' guide's example-query block (linked from the README), comments stripped. */
async function readmeQueries(): Promise<string[]> {
  const readme = await readFile(join(projectRoot(import.meta.url), 'docs', 'analysts.md'), 'utf8');
  const block = /Example queries[\s\S]*?```sql\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
  return block
    .split(/;\s*\n/)
    .map((q) =>
      q
        .split('\n')
        .filter((l) => !l.trim().startsWith('--'))
        .join('\n')
        .trim(),
    )
    .filter(Boolean);
}

describe('demo', () => {
  const dirPromise = mkdtemp(join(tmpdir(), 'salesync-demo-'));
  let result: DemoResult | undefined;
  afterAll(async () => rm(await dirPromise, { recursive: true, force: true }));

  it('syncs everything, then fetches only the changes, at the service’s real rate limit', async () => {
    const dir = await dirPromise;
    const lines: string[] = [];
    result = await runDemo({
      config: { ...DEFAULT_CONFIG, warehousePath: join(dir, 'demo.duckdb') },
      logger: pino({ level: 'silent' }),
      output: { heading: (t) => lines.push(t), line: (t) => lines.push(t), report: () => undefined, rows: () => undefined },
    });
    expect(result.first.ok && result.second.ok).toBe(true);
    expect(result.counts.deals).toBeGreaterThan(600);
    // The incremental pass costs a couple of requests per resource plus one per changed meeting log.
    expect(result.second.requests).toBeLessThan(result.first.requests / 3);
    expect(lines.join('\n')).toContain('An example query');
  });

  it('runs every example query of docs/analysts.md on the demo warehouse', async () => {
    expect(result).toBeDefined();
    const warehouse = createWarehouse(
      { ...DEFAULT_CONFIG, warehousePath: join(await dirPromise, 'demo.duckdb') },
      pino({ level: 'silent' }),
    );
    const queries = await readmeQueries();
    expect(queries.length).toBeGreaterThanOrEqual(5);
    for (const sql of queries) {
      const rows = await warehouse.query(sql);
      expect(rows.length, sql).toBeGreaterThan(0);
    }
  });

  it('refuses to rebuild a file it did not build (a real warehouse given by -w), and rebuilds its own', async () => {
    const dir = await dirPromise;
    const real = join(dir, 'warehouse.duckdb');
    await writeFile(real, 'a real warehouse');
    expect(() => checkDemoTarget(real)).toThrow(expect.objectContaining({ code: 'demo_would_overwrite' }));
    expect(await readFile(real, 'utf8')).toBe('a real warehouse');
    expect(() => checkDemoTarget(join(dir, 'missing.duckdb'))).not.toThrow();
    // The demo's own file carries its marker.
    expect(await readFile(demoMarkerPath(join(dir, 'demo.duckdb')), 'utf8')).toMatch(/salesync demo/);
    expect(() => checkDemoTarget(join(dir, 'demo.duckdb'))).not.toThrow();
  });
});
