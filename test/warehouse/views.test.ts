import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, ServiceRecord, ServiceUser, WalkCheckpoint } from '../../src/core/types.js';
import { openWarehouse, type PageBatch, type Warehouse } from '../../src/warehouse/index.js';
import { viewAliases } from '../../src/warehouse/views.js';

const ID = (prefix: string, n: number) => `${prefix}${String(n).padStart(17, '0')}`;
const HOSTILE = 'x"; DROP TABLE deals; --';

function def(
  api_name: string,
  display_name: string,
  property_type = 'text',
  options: PropertyDefinition['options'] = [],
): PropertyDefinition {
  return { api_name, display_name, property_type, is_core: false, is_required_on_create: false, options };
}

const STAGES = [
  { value: 'stg_lead', label: 'リード' },
  { value: 'stg_proposal', label: '提案' },
  { value: 'stg_won', label: '受注' },
];

const DEAL_DEFS: PropertyDefinition[] = [
  def('name', '商談名'),
  def('amount', '金額', 'number'),
  def('stage', 'フェーズ', 'select', STAGES),
  def('account_id', '取引先'),
  def('owner_id', '担当者'),
];

function record(id: string, updated_at: string, properties: ServiceRecord['properties']): ServiceRecord {
  return { id, properties, created_at: '2025-01-01T00:00:00Z', updated_at };
}

const checkpoint: WalkCheckpoint = { cursor: 'c', updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' };
const batch = (records: ServiceRecord[]): PageBatch => ({ records, checkpoint });

let dir: string;
let warehouse: Warehouse;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-views-'));
  warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('analyst views', () => {
  it('name columns by display name, keep their types, show labels and linked names', async () => {
    const users: ServiceUser[] = [{ id: ID('U', 1), email: 'sato@example.com', name: '佐藤', is_active: true }];
    await warehouse.replaceUsers(users, '2026-01-05T00:00:00Z');
    await warehouse.applyPropertyDefinitions('companies', [def('name', '取引先名')]);
    await warehouse.commitBatch('companies', batch([record(ID('C', 1), '2026-01-01T00:00:00Z', { name: 'Acme' })]));
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.applyPropertyDefinitions('meeting-logs', [def('deal_id', '商談'), def('meeting_name', '件名')]);
    await warehouse.commitBatch(
      'deals',
      batch([
        record(ID('D', 1), '2026-01-01T00:00:00Z', {
          name: '大型案件',
          amount: 1200.5,
          stage: 'stg_won',
          account_id: ID('C', 1),
          owner_id: ID('U', 1),
        }),
        record(ID('D', 2), '2026-01-01T00:00:00Z', { name: '謎', stage: 'stg_unknown' }),
      ]),
    );
    await warehouse.commitBatch(
      'meeting-logs',
      batch([record(ID('M', 1), '2026-01-02T00:00:00Z', { deal_id: ID('D', 1), meeting_name: '初回' })]),
    );

    const rows = await warehouse.query(`SELECT * FROM deals_view ORDER BY id`);
    expect(rows[0]).toMatchObject({
      id: ID('D', 1),
      商談名: '大型案件',
      金額: 1200.5,
      フェーズ: '受注',
      取引先: ID('C', 1),
      owner_name: '佐藤',
      owner_email: 'sato@example.com',
      company_name: 'Acme',
    });
    // A value outside the options (the service keeps those) shows as itself.
    expect(rows[1]).toMatchObject({ フェーズ: 'stg_unknown', owner_name: null, company_name: null });
    const types = await warehouse.query(`SELECT typeof("金額") AS amount, typeof(updated_at) AS updated FROM deals_view LIMIT 1`);
    expect(types).toEqual([{ amount: 'DOUBLE', updated: 'TIMESTAMP WITH TIME ZONE' }]);
    expect(await warehouse.query(`SELECT deal_name FROM meeting_logs_view`)).toEqual([{ deal_name: '大型案件' }]);
  });

  it('hides rows marked deleted', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.commitBatch(
      'deals',
      batch([record(ID('D', 1), '2026-01-01T00:00:00Z', { name: 'a' }), record(ID('D', 2), '2026-01-01T00:00:00Z', { name: 'b' })]),
    );
    // Marked by hand here: reconcile writes the same column.
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(warehouse.path);
    const connection = await instance.connect();
    await connection.run(`UPDATE deals SET _deleted_at = now() WHERE id = '${ID('D', 2)}'`);
    connection.closeSync();
    instance.closeSync();
    expect(await warehouse.query(`SELECT id FROM deals_view`)).toEqual([{ id: ID('D', 1) }]);
  });

  it('shows a new property as a column, and new labels after an options change', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.commitBatch('deals', batch([record(ID('D', 1), '2026-01-01T00:00:00Z', { name: 'a', stage: 'stg_lead' })]));
    await warehouse.applyPropertyDefinitions('deals', [
      ...DEAL_DEFS.map((d) =>
        d.api_name === 'stage' ? { ...d, options: [{ value: 'stg_lead', label: '見込み' }, ...STAGES.slice(1)] } : d,
      ),
      def('dNew0001', '新しい項目', 'number'),
    ]);
    await warehouse.commitBatch('deals', batch([record(ID('D', 2), '2026-01-02T00:00:00Z', { name: 'b', dNew0001: 42 })]));
    const rows = await warehouse.query(`SELECT id, "フェーズ", "新しい項目" FROM deals_view ORDER BY id`);
    expect(rows).toEqual([
      { id: ID('D', 1), フェーズ: '見込み', 新しい項目: null },
      { id: ID('D', 2), フェーズ: null, 新しい項目: 42 },
    ]);
    const options = await warehouse.query(
      `SELECT value, label FROM property_options WHERE resource = 'deals' AND api_name = 'stage' ORDER BY position`,
    );
    expect(options[0]).toEqual({ value: 'stg_lead', label: '見込み' });
  });

  it('records a type change, keeps the old column readable, and shows the new one in the view', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    await warehouse.commitBatch('deals', batch([record(ID('D', 1), '2026-01-01T00:00:00Z', { name: 'a', amount: 100 })]));
    const retyped = DEAL_DEFS.map((d) => (d.api_name === 'amount' ? { ...d, property_type: 'text' } : d));
    await warehouse.applyPropertyDefinitions('deals', retyped);
    await warehouse.commitBatch('deals', batch([record(ID('D', 2), '2026-01-02T00:00:00Z', { name: 'b', amount: '百万' })]));

    expect(await warehouse.query(`SELECT id, amount, amount__varchar FROM deals ORDER BY id`)).toEqual([
      { id: ID('D', 1), amount: 100, amount__varchar: '100' },
      { id: ID('D', 2), amount: null, amount__varchar: '百万' },
    ]);
    const changes = await warehouse.query(
      `SELECT resource, api_name, old_type, new_type, old_column, new_column FROM property_type_changes`,
    );
    expect(changes).toEqual([
      { resource: 'deals', api_name: 'amount', old_type: 'number', new_type: 'text', old_column: 'amount', new_column: 'amount__varchar' },
    ]);
    const view = await warehouse.query(`SELECT "金額", typeof("金額") AS t FROM deals_view ORDER BY id`);
    expect(view).toEqual([
      { 金額: '100', t: 'VARCHAR' },
      { 金額: '百万', t: 'VARCHAR' },
    ]);
    // Listing the same definitions again is not another change.
    await warehouse.applyPropertyDefinitions('deals', retyped);
    expect(await warehouse.query(`SELECT count(*) AS n FROM property_type_changes`)).toEqual([{ n: 1 }]);
  });

  it('treats hostile display names and labels as data: they change labels and nothing else', async () => {
    const hostile: PropertyDefinition[] = [
      def('name', HOSTILE),
      def('stage', 'フェーズ', 'select', [
        { value: 'stg_won', label: HOSTILE },
        { value: "it's", label: "'; DROP TABLE deals; --" },
      ]),
      def('dEmoji01', '🚀 "quoted" \\ back\u0000slash', 'number'),
      def('dEmpty01', ''),
    ];
    await warehouse.applyPropertyDefinitions('deals', hostile);
    await warehouse.commitBatch(
      'deals',
      batch([
        record(ID('D', 1), '2026-01-01T00:00:00Z', { name: 'n1', stage: 'stg_won', dEmoji01: 3, dEmpty01: 'e' }),
        record(ID('D', 2), '2026-01-01T00:00:00Z', { name: 'n2', stage: "it's" }),
      ]),
    );
    const rows = await warehouse.query(`SELECT * FROM deals_view ORDER BY id`);
    expect(rows[0]).toMatchObject({ [HOSTILE]: 'n1', フェーズ: HOSTILE, '🚀 "quoted" \\ back\uFFFDslash': 3, dEmpty01: 'e' });
    expect(rows[1]).toMatchObject({ フェーズ: "'; DROP TABLE deals; --" });
    expect(await warehouse.query(`SELECT count(*) AS n FROM deals`)).toEqual([{ n: 2 }]);
    const stored = await warehouse.query(`SELECT display_name FROM property_definitions WHERE api_name = 'name'`);
    expect(stored).toEqual([{ display_name: HOSTILE }]);
  });

  it('gives case-colliding api_names and display names distinct, deterministic view columns', async () => {
    const defs = [def('Region01', 'Region', 'select', [{ value: 'r1', label: '関東' }]), def('region01', 'region'), def('dDup0001', 'id')];
    await warehouse.applyPropertyDefinitions('deals', defs);
    await warehouse.commitBatch(
      'deals',
      batch([record(ID('D', 1), '2026-01-01T00:00:00Z', { Region01: 'r1', region01: 'memo', dDup0001: 'dup' })]),
    );
    const [row] = await warehouse.query(`SELECT * FROM deals_view`);
    expect(row).toEqual({
      id: ID('D', 1),
      created_at: '2025-01-01T00:00:00.000000Z',
      updated_at: '2026-01-01T00:00:00.000000Z',
      'Region (Region01)': '関東',
      // `region (region01)` would fold onto `Region (Region01)`: the column name is unique.
      'region (region01__2)': 'memo',
      'id (dDup0001)': 'dup',
      // Linked names are always there, NULL until the linked table exists.
      owner_name: null,
      owner_email: null,
      company_name: null,
    });
    // The service listing them in another order names them the same.
    await warehouse.applyPropertyDefinitions('deals', [...defs].reverse());
    expect(Object.keys((await warehouse.query(`SELECT * FROM deals_view`))[0]!)).toEqual(Object.keys(row!));
  });

  it('disambiguates aliases with api_name, then column name, then a number (pure)', () => {
    const p = (apiName: string, columnName: string, displayName: string) => ({ apiName, columnName, displayName });
    expect(viewAliases([p('A', 'A', 'x'), p('a', 'a__2', 'X'), p('b', 'b', 'y')], ['id'])).toEqual(['x (A)', 'X (a__2)', 'y']);
    // Same display name and api_names folding together: the column name (unique) decides.
    expect(viewAliases([p('Ab', 'Ab', 'n'), p('aB', 'aB__2', 'n')], [])).toEqual(['n (Ab)', 'n (aB__2)']);
    expect(viewAliases([p('a', 'a', 'x (b)'), p('b', 'b', 'x'), p('c', 'c', 'X')], [])).toEqual(['x (b)', 'x (b) #2', 'X (c)']);
  });
});

describe('history', () => {
  it('builds deal_stage_history on SCD2 versions: a late older page is no version, a deletion ends a stretch, a restore starts one', async () => {
    await warehouse.applyPropertyDefinitions('deals', DEAL_DEFS);
    const id = ID('D', 1);
    const commit = (updatedAt: string, name: string, stage: string) =>
      warehouse.commitBatch('deals', batch([record(id, updatedAt, { name, stage })]));
    await commit('2026-01-01T00:00:00.000001Z', 'v0', 'stg_lead');
    await commit('2026-01-02T00:00:00Z', 'v1', 'stg_lead'); // another property changed: same stretch
    await commit('2026-01-03T00:00:00+09:00', 'v2', 'stg_proposal');
    await commit('2026-01-04T00:00:00Z', 'v3', 'stg_won');
    // A late page with an older version: not written to deals, so not a version of the mirror.
    await commit('2026-01-03T00:00:00Z', 'late', 'stg_lead');
    // A boundary re-delivery adds nothing.
    await commit('2026-01-04T00:00:00Z', 'v3', 'stg_won');
    await warehouse.completeSweep('deals', {
      key: 'deals#reconcile',
      stateKey: 'deals#reconcile',
      deletedIds: [id],
      deletedAt: '2026-01-05T00:00:00Z',
      completedAt: '2026-01-05T00:00:00Z',
    });
    await commit('2026-01-06T00:00:00Z', 'v4', 'stg_won');

    const history = await warehouse.query(
      `SELECT properties->>'name' AS name, source, deleted, is_current, valid_to IS NULL AS open FROM deals_history ORDER BY change_seq`,
    );
    expect(history.map((h) => [h.name, h.source, h.deleted, h.is_current, h.open])).toEqual([
      ['v0', 'incremental', false, false, false],
      ['v1', 'incremental', false, false, false],
      ['v2', 'incremental', false, false, false],
      ['v3', 'incremental', false, false, false],
      ['v3', 'deleted', true, false, false],
      ['v4', 'restored', false, true, true],
    ]);

    const stages = await warehouse.query(`SELECT * FROM deal_stage_history ORDER BY valid_from`);
    expect(stages).toEqual([
      {
        deal_id: id,
        stage: 'stg_lead',
        stage_label: 'リード',
        valid_from: '2026-01-01T00:00:00.000001Z',
        valid_to: '2026-01-02T15:00:00.000000Z',
        is_current: false,
      },
      {
        deal_id: id,
        stage: 'stg_proposal',
        stage_label: '提案',
        valid_from: '2026-01-02T15:00:00.000000Z',
        valid_to: '2026-01-04T00:00:00.000000Z',
        is_current: false,
      },
      // The deletion ends the stretch; the restore, in the same stage, starts a new one.
      {
        deal_id: id,
        stage: 'stg_won',
        stage_label: '受注',
        valid_from: '2026-01-04T00:00:00.000000Z',
        valid_to: '2026-01-05T00:00:00.000000Z',
        is_current: false,
      },
      { deal_id: id, stage: 'stg_won', stage_label: '受注', valid_from: '2026-01-06T00:00:00.000000Z', valid_to: null, is_current: true },
    ]);
  });
});
