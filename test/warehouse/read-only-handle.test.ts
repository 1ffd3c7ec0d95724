import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/core/paths.js';
import { openWarehouse } from '../../src/warehouse/index.js';

/** Whether another process can open `path` read-write now, which it cannot while any process holds the file. */
function writableElsewhere(path: string): boolean {
  const script = `import { DuckDBInstance } from '@duckdb/node-api';
    try { (await DuckDBInstance.create(process.argv[1])).closeSync(); process.stdout.write('free'); } catch { process.stdout.write('held'); }`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, path], { cwd: projectRoot(import.meta.url) });
  return out.toString() === 'free';
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'salesync-ro-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a read-only Warehouse (a reader of the published file)', () => {
  it('never creates the file: a missing one is warehouse_missing', async () => {
    const path = join(dir, 'absent.duckdb');
    const reader = openWarehouse({ path, readOnly: true });
    await expect(reader.recentRuns(5)).rejects.toMatchObject({ code: 'warehouse_missing' });
    expect(existsSync(path)).toBe(false);
  });

  it('reads, and refuses every write with warehouse_read_only', async () => {
    const path = join(dir, 'w.duckdb');
    const writer = openWarehouse({ path });
    await writer.ensureSchema();
    await writer.close();
    const reader = openWarehouse({ path, readOnly: true });
    expect(await reader.recentRuns(5)).toEqual([]);
    await expect(reader.ensureSchema()).rejects.toMatchObject({ code: 'warehouse_read_only' });
    await expect(reader.startRun({ resource: 'deals', mode: 'incremental', startedAt: new Date() })).rejects.toMatchObject({
      code: 'warehouse_read_only',
    });
    await expect(reader.query('DELETE FROM sync_runs')).rejects.toMatchObject({ code: 'query_refused' });
  });

  it('a writer with a publish target publishes on publish() when something changed or the published file is missing', async () => {
    const published = join(dir, 'pub', 'warehouse.duckdb');
    const writer = openWarehouse({ path: join(dir, '.salesync', 'warehouse.writer.duckdb'), publish: { path: published } });
    expect((await writer.publish())?.path).toBe(published);
    expect(await writer.publish()).toBeNull();
    await writer.ensureSchema();
    expect((await writer.publish())?.path).toBe(published);
    expect(await writer.publish()).toBeNull();
    await writer.close();
    expect(await openWarehouse({ path: published, readOnly: true }).recentRuns(1)).toEqual([]);
  });

  it('reads in a row share one open of the file, released once the caller goes idle: the next read sees the next publish', async () => {
    const published = join(dir, 'pub', 'warehouse.duckdb');
    const writer = openWarehouse({ path: join(dir, '.salesync', 'warehouse.writer.duckdb'), publish: { path: published } });
    await writer.ensureSchema();
    await writer.publish();
    const reader = openWarehouse({ path: published, readOnly: true });
    expect(await reader.recentRuns(5)).toEqual([]);
    // No turn of the event loop since that read (the check below blocks it): the burst's session is still open.
    expect(writableElsewhere(published)).toBe(false);
    expect(await reader.tableCounts()).toMatchObject({ deals: 0 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(writableElsewhere(published)).toBe(true);

    await writer.startRun({ resource: 'deals', mode: 'incremental', startedAt: new Date() });
    await writer.publish();
    expect((await reader.recentRuns(5)).map((r) => r.resource)).toEqual(['deals']);
    await writer.close();
    await reader.close();
  });
});
