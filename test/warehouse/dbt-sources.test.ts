import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWarehouse } from '../../src/sync/index.js';
import { dbtSourcesYaml } from '../../src/warehouse/dbt-sources-yaml.js';
import type { CatalogRelation } from '../../src/warehouse/index.js';
import { cliEnv, runCli } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';

interface SourcesFile {
  version: number;
  sources: {
    name: string;
    database?: string;
    schema: string;
    tables: {
      name: string;
      description?: string;
      loaded_at_field?: string;
      freshness?: unknown;
      columns: { name: string; description?: string; data_tests?: string[] }[];
    }[];
  }[];
}

let harness: Harness;
let catalog: CatalogRelation[];

beforeAll(async () => {
  harness = await startHarness({
    seed: 2101,
    size: { deals: 30, companies: 10, contacts: 20, meetingLogs: 5, contactActivities: 10, users: 3 },
  });
  const custom = harness.sim.admin.addProperty('deals', { display_name: '紹介元', property_type: 'text' });
  harness.sim.admin.updateRecord('deals', harness.sim.admin.truth().records.deals[0]!.id, { [custom.api_name]: '展示会' });
  expect((await harness.sync()).ok).toBe(true);
  catalog = await createWarehouse(harness.config, pino({ level: 'silent' })).catalog();
});

afterAll(async () => harness?.close());

describe('salesync dbt-sources', () => {
  it('names every table and view of the warehouse and every column of each, as the file itself lists them, history stores as their views', async () => {
    const sources = parse(dbtSourcesYaml(catalog)) as SourcesFile;
    const listed = new Map(sources.sources[0]!.tables.map((t) => [t.name, t.columns.map((c) => c.name)]));
    const rows = await createWarehouse(harness.config, pino({ level: 'silent' })).query(
      `SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main' ORDER BY table_name, column_index`,
    );
    const actual = new Map<string, string[]>();
    for (const row of rows) actual.set(String(row.table_name), [...(actual.get(String(row.table_name)) ?? []), String(row.column_name)]);
    expect(actual.has('deals_history_store')).toBe(true);
    for (const name of actual.keys()) if (name.endsWith('_history_store')) actual.delete(name);
    expect(Object.fromEntries(listed)).toEqual(Object.fromEntries(actual));
    expect(listed.has('deals_view')).toBe(true);
    expect(listed.has('deal_stage_history')).toBe(true);
  });

  it('describes a custom property by its display name and api_name, in the table and in its view', () => {
    const sources = parse(dbtSourcesYaml(catalog)) as SourcesFile;
    const deals = sources.sources[0]!.tables.find((t) => t.name === 'deals')!;
    const view = sources.sources[0]!.tables.find((t) => t.name === 'deals_view')!;
    expect(deals.columns.some((c) => c.description?.startsWith('紹介元 ('))).toBe(true);
    expect(view.columns.find((c) => c.name === '紹介元')?.description).toMatch(/^紹介元 \(.+\)$/);
  });

  it('tests ids unique and not null where a table holds one row per record, and only not null in history', () => {
    const tables = (parse(dbtSourcesYaml(catalog)) as SourcesFile).sources[0]!.tables;
    const idTests = (name: string) => tables.find((t) => t.name === name)!.columns.find((c) => c.name === 'id')!.data_tests;
    for (const name of ['deals', 'companies', 'contacts', 'meeting_logs', 'contact_activities', 'users'])
      expect(idTests(name), name).toEqual(['unique', 'not_null']);
    expect(idTests('deals_history')).toEqual(['not_null']);
  });

  it('checks freshness on _synced_at wherever a table has it, and nowhere else', () => {
    const tables = (parse(dbtSourcesYaml(catalog, { warnAfterHours: 6, errorAfterHours: 12 })) as SourcesFile).sources[0]!.tables;
    for (const table of tables) {
      const synced = table.columns.some((c) => c.name === '_synced_at');
      expect(table.loaded_at_field, table.name).toBe(synced ? '_synced_at' : undefined);
      if (synced) expect(table.freshness).toEqual({ warn_after: { count: 6, period: 'hour' }, error_after: { count: 12, period: 'hour' } });
    }
    expect(tables.find((t) => t.name === 'deals')!.loaded_at_field).toBe('_synced_at');
  });

  it('writes the file with --out from the CLI (its directory made when missing), with the source and database names asked for', async () => {
    const out = join(harness.dir, 'models', 'sources.yml');
    const run = await runCli(['dbt-sources', '--out', out, '--source-name', 'crm', '--database', 'salesync'], cliEnv(harness));
    expect(run.code, run.stderr).toBe(0);
    const sources = parse(readFileSync(out, 'utf8')) as SourcesFile;
    expect(sources.version).toBe(2);
    expect(sources.sources[0]).toMatchObject({ name: 'crm', database: 'salesync', schema: 'main' });
    expect(sources.sources[0]!.tables.length).toBe(catalog.length);
  });
});
