import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, describe, expect, it } from 'vitest';
import type { SalesApi } from '../../src/api/types.js';
import { runSync } from '../../src/sync/index.js';
import { startHarness, type Harness } from '../support/harness.js';
import { wrapApi } from '../support/wrap-api.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SMALL = { deals: 60, companies: 20, contacts: 60, meetingLogs: 20, contactActivities: 30, users: 5 };
const HOSTILE = 'x"; DROP TABLE deals; --';
/** What the views join: deals with their owners and companies. */
const RESOURCES = ['users', 'companies', 'deals'] as const;

async function readOne(connection: Awaited<ReturnType<DuckDBInstance['connect']>>, sql: string): Promise<Record<string, unknown>> {
  return (await connection.runAndReadAll(sql)).getRowObjectsJson()[0] as Record<string, unknown>;
}

describe('analyst views, history and snapshots against the simulator', () => {
  it('follows definition changes in the views: a new property, new labels, a type change, hostile and case-colliding names', async () => {
    harness = await startHarness({ seed: 21, size: SMALL });
    expect((await harness.sync({ resources: RESOURCES })).ok).toBe(true);
    const { sim } = harness;
    const warehouse = harness.env().warehouse;
    const deal = sim.admin.truth().records.deals[0]!;
    const before = await warehouse.query(`SELECT "見込み粗利" AS v FROM deals_view WHERE id = '${deal.id}'`);

    sim.admin.addProperty('deals', {
      api_name: 'dHostil1',
      display_name: HOSTILE,
      property_type: 'select',
      options: [{ value: 'v1', label: HOSTILE }],
    });
    sim.admin.updateRecord('deals', deal.id, { dHostil1: 'v1', stage: 'stg_won' });
    sim.admin.updatePropertyOptions('deals', 'stage', [
      { value: 'stg_lead', label: 'リード' },
      { value: 'stg_qualify', label: '要件確認' },
      { value: 'stg_proposal', label: '提案' },
      { value: 'stg_negotiation', label: '交渉' },
      { value: 'stg_won', label: '受注 🎉' },
      { value: 'stg_lost', label: '失注' },
    ]);
    sim.admin.changePropertyType('deals', 'dK3mP9xQ', 'text');
    expect((await harness.sync({ resources: RESOURCES })).ok).toBe(true);

    const [row] = await warehouse.query(`SELECT * FROM deals_view WHERE id = '${deal.id}'`);
    expect(row).toMatchObject({ [HOSTILE]: HOSTILE, フェーズ: '受注 🎉' });
    // Both case-colliding api_names (Region01, region01) are there, under their own display names.
    expect(Object.keys(row!)).toEqual(expect.arrayContaining(['地域', '地域メモ', 'owner_name', 'owner_email', 'company_name']));
    // The old number survives the type change: in its frozen column and, as text, in the view.
    const [typed] = await warehouse.query(
      `SELECT d."dK3mP9xQ" AS old, v."見込み粗利" AS now, typeof(v."見込み粗利") AS t
       FROM deals d JOIN deals_view v ON v.id = d.id WHERE d.id = '${deal.id}'`,
    );
    expect(typed).toMatchObject({ old: before[0]!.v, t: 'VARCHAR' });
    if (before[0]!.v !== null) expect(Number(typed!.now)).toBe(before[0]!.v);
    expect(await warehouse.query(`SELECT old_type, new_type, new_column FROM property_type_changes`)).toEqual([
      { old_type: 'number', new_type: 'text', new_column: 'dK3mP9xQ__varchar' },
    ]);
    expect((await warehouse.tableCounts()).deals).toBe(SMALL.deals);
  });

  it('keeps every version of a deal moved through three stages, and publishes a snapshot readers can hold across runs', async () => {
    harness = await startHarness({ seed: 22, size: SMALL });
    const snapshotPath = join(harness.dir, 'bi', 'snapshot.duckdb');
    const config = { snapshotPath };
    const first = await harness.sync({ config, resources: RESOURCES });
    expect(first.ok).toBe(true);
    expect(first.snapshot?.path).toBe(snapshotPath);

    const { sim } = harness;
    const deal = sim.admin
      .truth()
      .records.deals.find((d) => d.properties.stage !== 'stg_qualify' && d.properties.stage !== 'stg_proposal')!;
    // A BI tool holds the first snapshot open through every later run.
    const held = await DuckDBInstance.create(snapshotPath, { access_mode: 'READ_ONLY' });
    const heldConnection = await held.connect();
    try {
      const stages = ['stg_qualify', 'stg_proposal', 'stg_won'];
      for (const stage of stages) {
        sim.admin.updateRecord('deals', deal.id, { stage });
        const report = await harness.sync({ config, resources: ['deals'] });
        expect(report.ok).toBe(true);
        expect(report.snapshot).toBeDefined();
      }
      const history = await harness
        .env()
        .warehouse.query(
          `SELECT stage, stage_label, valid_from, valid_to FROM deal_stage_history WHERE deal_id = '${deal.id}' ORDER BY valid_from`,
        );
      expect(history.map((h) => h.stage)).toEqual([deal.properties.stage, ...stages]);
      expect(history.slice(1).map((h) => h.stage_label)).toEqual(['要件確認', '提案', '受注']);
      // valid_from is the version's updated_at; each stretch ends where the next begins; the last is open.
      const versions = await harness
        .env()
        .warehouse.query(`SELECT updated_at FROM deals_history WHERE id = '${deal.id}' ORDER BY updated_at`);
      expect(history.map((h) => h.valid_from)).toEqual(versions.map((v) => v.updated_at));
      for (let i = 0; i < history.length - 1; i += 1) expect(history[i]!.valid_to).toBe(history[i + 1]!.valid_from);
      expect(history.at(-1)!.valid_to).toBeNull();

      // The held snapshot is still the first run's, whole.
      expect(await readOne(heldConnection, `SELECT "フェーズ" AS stage FROM deals_view WHERE id = '${deal.id}'`)).toEqual({
        stage: sim.admin
          .truth()
          .properties.deals.find((p) => p.api_name === 'stage')!
          .options.find((o) => o.value === deal.properties.stage)!.label,
      });
      expect(await readOne(heldConnection, `SELECT count(*)::INTEGER AS n FROM deals_history WHERE id = '${deal.id}'`)).toEqual({ n: 1 });
    } finally {
      heldConnection.closeSync();
      held.closeSync();
    }
    const fresh = await DuckDBInstance.create(snapshotPath, { access_mode: 'READ_ONLY' });
    const connection = await fresh.connect();
    try {
      expect(await readOne(connection, `SELECT "フェーズ" AS stage FROM deals_view WHERE id = '${deal.id}'`)).toEqual({ stage: '受注' });
    } finally {
      connection.closeSync();
      fresh.closeSync();
    }
  });

  it('shows labels for any type with options and follows links however the service types them, or leaves them unlisted', async () => {
    harness = await startHarness({ seed: 22, size: SMALL });
    const env = harness.env();
    // The spec enumerates no property type but text: here stage is a `picklist`, owner_id a `reference`, and
    // account_id is not listed at all (the records still carry it).
    const retyped = (): SalesApi => {
      const api = env.deps.makeApi();
      return wrapApi(api, {
        listProperties: async (resource, signal) => {
          const listed = await api.listProperties(resource, signal);
          if (resource !== 'deals') return listed;
          const definitions = listed.definitions
            .filter((d) => d.api_name !== 'account_id')
            .map((d) =>
              d.api_name === 'stage'
                ? { ...d, property_type: 'picklist' }
                : d.api_name === 'owner_id'
                  ? { ...d, property_type: 'reference' }
                  : d,
            );
          return { ...listed, definitions };
        },
      });
    };
    const report = await runSync({ ...env.deps, makeApi: retyped }, env.settings, {
      resources: [...RESOURCES],
      mode: 'incremental',
      concurrency: 1,
    });
    expect(report.ok).toBe(true);
    const truth = harness.sim.admin.truth();
    const deal = truth.records.deals.find((d) => d.properties.stage === 'stg_won' && d.properties.owner_id && d.properties.account_id)!;
    const label = (await env.warehouse.query(`SELECT label FROM property_options WHERE api_name = 'stage' AND value = 'stg_won'`))[0]!
      .label;
    const owner = truth.users.find((u) => u.id === deal.properties.owner_id)!;
    const company = truth.records.companies.find((c) => c.id === deal.properties.account_id)!;
    const [row] = await env.warehouse.query(`SELECT フェーズ AS stage, owner_name, company_name FROM deals_view WHERE id = '${deal.id}'`);
    expect(row).toEqual({ stage: label, owner_name: owner.name, company_name: company.properties.name });
    const [version] = await env.warehouse.query(`SELECT フェーズ AS stage FROM deals_history_view WHERE id = '${deal.id}' AND is_current`);
    expect(version).toEqual({ stage: label });
  });

  it('shows a multi-select value (its options joined by ;) as the labels of its parts, joined alike, live and in history', async () => {
    harness = await startHarness({ seed: 23, size: SMALL });
    expect((await harness.sync({ resources: RESOURCES })).ok).toBe(true);
    const warehouse = harness.env().warehouse;
    const labels = new Map(
      (await warehouse.query(`SELECT value, label FROM property_options WHERE api_name = 'dM9qW3rT'`)).map((r) => [
        String(r.value),
        String(r.label),
      ]),
    );
    const deal = harness.sim.admin.truth().records.deals.find((d) => String(d.properties.dM9qW3rT ?? '').includes(';'))!;
    const expected = String(deal.properties.dM9qW3rT)
      .split(';')
      .map((part) => labels.get(part) ?? part)
      .join(';');
    expect(await warehouse.query(`SELECT "関心製品" AS v FROM deals_view WHERE id = '${deal.id}'`)).toEqual([{ v: expected }]);
    expect(await warehouse.query(`SELECT "関心製品" AS v FROM deals_history_view WHERE id = '${deal.id}' AND is_current`)).toEqual([
      { v: expected },
    ]);
  });
});
