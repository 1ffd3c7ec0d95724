import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, ServiceRecord, WalkCheckpoint } from '../../src/core/types.js';
import { createExportDirectory, exportAccessFor, OWNER_ONLY_EXPORT, shareExport } from '../../src/warehouse/export.js';
import { openWarehouse, type PageBatch, type Warehouse } from '../../src/warehouse/index.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;
const DEFS: PropertyDefinition[] = [
  { api_name: 'name', display_name: '商談名', property_type: 'text', is_core: true, is_required_on_create: true, options: [] },
  {
    api_name: 'stage',
    display_name: 'フェーズ',
    property_type: 'select',
    is_core: true,
    is_required_on_create: false,
    options: [{ value: 's1', label: 'リード' }],
  },
];
const checkpoint: WalkCheckpoint = { cursor: 'c', updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' };

function deals(from: number, to: number): PageBatch {
  const records: ServiceRecord[] = [];
  for (let n = from; n <= to; n += 1) {
    records.push({
      id: ID(n),
      properties: { name: `deal ${n}`, stage: 's1' },
      created_at: '2025-01-01T00:00:00Z',
      updated_at: '2026-01-01T00:00:00Z',
    });
  }
  return { records, checkpoint };
}

async function count(connection: Awaited<ReturnType<DuckDBInstance['connect']>>, sql: string): Promise<number> {
  return Number((await connection.runAndReadAll(sql)).getRowObjects()[0]?.n);
}

let dir: string;
let warehouse: Warehouse;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-snapshot-'));
  warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
  await warehouse.applyPropertyDefinitions('deals', DEFS);
  await warehouse.commitBatch('deals', deals(1, 10));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('snapshots', () => {
  it('replaces the snapshot atomically: a reader holding the old one keeps a consistent copy, a new reader sees the new one', async () => {
    const target = join(dir, 'published', 'snapshot.duckdb');
    const first = await warehouse.publishSnapshot(target);
    expect(first.path).toBe(target);
    expect(first.bytes).toBeGreaterThan(0);

    // A BI tool opens the snapshot and keeps it open.
    const reader = await DuckDBInstance.create(target, { access_mode: 'READ_ONLY' });
    const held = await reader.connect();
    try {
      expect(await count(held, `SELECT count(*) AS n FROM deals_view`)).toBe(10);

      // The writer is not blocked by the reader: it commits and publishes again meanwhile.
      await warehouse.commitBatch('deals', deals(11, 25));
      const second = await warehouse.publishSnapshot(target);
      expect(second.path).toBe(target);

      // The held copy is the old one, whole: every table agrees with every other.
      expect(await count(held, `SELECT count(*) AS n FROM deals`)).toBe(10);
      expect(await count(held, `SELECT count(*) AS n FROM deals_history`)).toBe(10);

      const fresh = await DuckDBInstance.create(target, { access_mode: 'READ_ONLY' });
      const connection = await fresh.connect();
      expect(await count(connection, `SELECT count(*) AS n FROM deals_view`)).toBe(25);
      expect(await count(connection, `SELECT count(*) AS n FROM deals_history`)).toBe(25);
      connection.closeSync();
      fresh.closeSync();
    } finally {
      held.closeSync();
      reader.closeSync();
    }
    // No temporary file is left beside the target.
    expect(readdirSync(join(dir, 'published'))).toEqual(['snapshot.duckdb']);
  });

  it('removes a stale WAL beside the target, and refuses to publish over the warehouse itself', async () => {
    const target = join(dir, 'snapshot.duckdb');
    writeFileSync(`${target}.wal`, 'stale');
    await warehouse.publishSnapshot(target);
    expect(readdirSync(dir).sort()).toEqual(['mirror.duckdb', 'snapshot.duckdb']);
    await expect(warehouse.publishSnapshot(warehouse.path)).rejects.toMatchObject({ code: 'invalid_snapshot_path' });
  });
});

describe('parquet export', () => {
  it('writes one readable Parquet file per table and view, a history store as its view', async () => {
    const out = join(dir, 'export');
    const files = await warehouse.exportParquet(out);
    const relations = files.map((f) => f.relation);
    for (const name of [
      'deals',
      'deals_view',
      'deals_history',
      'deal_stage_history',
      'property_definitions',
      'property_options',
      'sync_runs',
      'users',
    ]) {
      expect(relations).toContain(name);
    }
    expect(relations).not.toContain('deals_history_store');
    expect(readdirSync(out).every((f) => f.endsWith('.parquet'))).toBe(true);

    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      for (const file of files) {
        const n = await count(connection, `SELECT count(*) AS n FROM read_parquet('${file.file}')`);
        expect(n, file.relation).toBe(file.rows);
      }
      const view = files.find((f) => f.relation === 'deals_view')!;
      expect(view.rows).toBe(10);
      const reader = await connection.runAndReadAll(`SELECT "商談名", "フェーズ" FROM read_parquet('${view.file}') ORDER BY 1 LIMIT 1`);
      expect(reader.getRowObjectsJson()).toEqual([{ 商談名: 'deal 1', フェーズ: 'リード' }]);
      const types = await connection.runAndReadAll(`SELECT typeof(updated_at) AS t FROM read_parquet('${view.file}') LIMIT 1`);
      expect(types.getRowObjectsJson()).toEqual([{ t: 'TIMESTAMP WITH TIME ZONE' }]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });
});

describe('who may read an export', () => {
  const modeOf = (path: string) => statSync(path).mode & 0o777;

  /** Under the usual umask 022, which would make DuckDB's files 0644 and mkdir's 0755. */
  async function underUmask022<T>(body: () => Promise<T>): Promise<T> {
    const previous = process.umask(0o022);
    try {
      return await body();
    } finally {
      process.umask(previous);
    }
  }

  it('an export is owner-only: the directories it creates 0700, its files 0600, and no partial file is left', async () => {
    const out = join(dir, 'exports', 'today');
    const files = await underUmask022(() => warehouse.exportParquet(out));
    expect(files.length).toBeGreaterThan(0);
    expect(modeOf(join(dir, 'exports')).toString(8)).toBe('700');
    expect(modeOf(out).toString(8)).toBe('700');
    for (const { file } of files) expect(modeOf(file).toString(8), file).toBe('600');
    expect(readdirSync(out).filter((f) => !f.endsWith('.parquet'))).toEqual([]);
  });

  it("a directory that already exists is the operator's: left as it is, and a replaced file is owner-only again", async () => {
    const out = join(dir, 'shared');
    mkdirSync(out);
    chmodSync(out, 0o755); // this process's umask is the writer's 077 by now
    const first = await underUmask022(() => warehouse.exportParquet(out));
    await shareExport(first, { mode: 0o644, group: null });
    expect(modeOf(first[0]!.file).toString(8)).toBe('644');
    const again = await underUmask022(() => warehouse.exportParquet(out));
    expect(modeOf(out).toString(8)).toBe('755');
    for (const { file } of again) expect(modeOf(file).toString(8), file).toBe('600');
  });

  it('follows the published warehouse once the operator opened it up: its mode and group, directories with the matching x bits', async () => {
    expect(exportAccessFor({ mode: 0o640, group: null })).toEqual(OWNER_ONLY_EXPORT);
    expect(exportAccessFor({ mode: 0o644, group: null })).toEqual({ mode: 0o644, group: null });
    expect(exportAccessFor({ mode: 0o640, group: 'analysts' })).toEqual({ mode: 0o640, group: 'analysts' });

    const everyone = join(dir, 'for-everyone', 'out');
    const access = exportAccessFor({ mode: 0o644, group: null });
    await underUmask022(async () => {
      await createExportDirectory(everyone, access);
      await shareExport(await warehouse.exportParquet(everyone), access);
    });
    expect(modeOf(join(dir, 'for-everyone')).toString(8)).toBe('755');
    expect(modeOf(everyone).toString(8)).toBe('755');
    for (const f of readdirSync(everyone)) expect(modeOf(join(everyone, f)).toString(8), f).toBe('644');
  });

  // Handing a file to another group needs root (or membership of that group).
  it.skipIf(process.getuid?.() !== 0)('gives files and created directories SALESYNC_PUBLISH_GROUP, group-readable only', async () => {
    const gid = 65534;
    const analysts = join(dir, 'for-analysts');
    const access = exportAccessFor({ mode: 0o640, group: String(gid) });
    await createExportDirectory(analysts, access);
    const files = await warehouse.exportParquet(analysts);
    await shareExport(files, access);
    expect(statSync(analysts).gid).toBe(gid);
    expect(modeOf(analysts).toString(8)).toBe('750');
    for (const { file } of files) {
      expect(statSync(file).gid, file).toBe(gid);
      expect(modeOf(file).toString(8), file).toBe('640');
    }
  });
});
