import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/index.js';

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
});
