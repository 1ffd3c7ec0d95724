import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition, RejectedRecord, ServiceRecord, ServiceUser, WalkCheckpoint } from '../../src/core/types.js';
import { openWarehouse, type PageBatch, type Warehouse } from '../../src/warehouse/index.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;
const DEFS: PropertyDefinition[] = [
  { api_name: 'name', display_name: 'name', property_type: 'text', is_core: true, is_required_on_create: true, options: [] },
];
const checkpoint = (cursor: string | null): WalkCheckpoint => ({
  cursor,
  updatedAfter: null,
  startedAt: '2026-01-05T00:00:00Z',
  mode: 'incremental',
});

function deal(n: number, updated_at = '2026-01-02T00:00:00Z', name = `deal ${n}`): ServiceRecord {
  return { id: ID(n), properties: { name }, created_at: '2025-12-01T00:00:00Z', updated_at };
}
const reject = (
  id: string | null,
  reason = 'properties.name: must be a string, a finite number, a boolean or null',
  raw = `{"id":${JSON.stringify(id)},"properties":{"name":{}}}`,
): RejectedRecord => ({ id, raw, reason });
const batch = (records: ServiceRecord[], rejects: RejectedRecord[], runId = 'run-1', extra: Partial<PageBatch> = {}): PageBatch => ({
  records,
  checkpoint: checkpoint('c'),
  rejects,
  runId,
  ...extra,
});

let dir: string;
let warehouse: Warehouse;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-quarantine-'));
  warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
  await warehouse.applyPropertyDefinitions('deals', DEFS);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const quarantined = () =>
  warehouse.query(
    `SELECT resource, id, raw, reason, run_id, first_seen_at, last_seen_at FROM rejected_records ORDER BY resource, id NULLS LAST, raw`,
  );

describe('quarantine', () => {
  it("puts a batch's rejects in quarantine beside the records it writes, naming the run and the reason", async () => {
    const result = await warehouse.commitBatch('deals', batch([deal(1)], [reject(ID(2))]));
    expect(result).toMatchObject({ written: 1 });
    expect(await quarantined()).toEqual([
      expect.objectContaining({ resource: 'deals', id: ID(2), raw: reject(ID(2)).raw, reason: reject(ID(2)).reason, run_id: 'run-1' }),
    ]);
    expect(await warehouse.query(`SELECT id FROM deals`)).toEqual([{ id: ID(1) }]);
  });

  it('a record rejected again updates raw, reason, run and last_seen_at, and keeps first_seen_at', async () => {
    await warehouse.commitBatch('deals', batch([], [reject(ID(2))]));
    const [before] = await quarantined();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await warehouse.commitBatch('deals', batch([], [reject(ID(2), 'created_at: not a date-time', '{"id":"D00000000000000002"}')], 'run-2'));
    const after = await quarantined();
    expect(after).toEqual([
      {
        resource: 'deals',
        id: ID(2),
        raw: '{"id":"D00000000000000002"}',
        reason: 'created_at: not a date-time',
        run_id: 'run-2',
        first_seen_at: before!.first_seen_at,
        last_seen_at: expect.any(String),
      },
    ]);
    expect(String(after[0]!.last_seen_at) > String(before!.last_seen_at)).toBe(true);
  });

  it('keeps a record without an id once per raw text', async () => {
    await warehouse.commitBatch(
      'deals',
      batch([], [reject(null, 'id: missing', '{"a":1}'), reject(null, 'id: missing', '{"a":2}'), reject(null, 'id: missing', '{"a":1}')]),
    );
    await warehouse.commitBatch('deals', batch([], [reject(null, 'id: missing', '{"a":2}')], 'run-2'));
    expect((await quarantined()).map((r) => [r.id, r.raw, r.run_id])).toEqual([
      [null, '{"a":1}', 'run-1'],
      [null, '{"a":2}', 'run-2'],
    ]);
  });

  it('a record written by a later batch leaves quarantine; one an incremental batch skips as older does not', async () => {
    await warehouse.commitBatch('deals', batch([deal(3, '2026-01-03T00:00:00Z')], []));
    await warehouse.commitBatch('deals', batch([], [reject(ID(1)), reject(ID(2)), reject(ID(3))]));
    // Deal 1 fixed at the service; deal 3 seen in an older version than the stored row (a late page): not written.
    await warehouse.commitBatch('deals', batch([deal(1), deal(3, '2026-01-01T00:00:00Z')], []));
    expect((await quarantined()).map((r) => r.id)).toEqual([ID(2), ID(3)]);
    // Observed wins writes it: it leaves.
    await warehouse.commitBatch('deals', batch([deal(3, '2026-01-01T00:00:00Z')], [], 'run-3', { observedWins: true }));
    expect((await quarantined()).map((r) => r.id)).toEqual([ID(2)]);
  });

  it('a record rejected before it was ever stored leaves quarantine when a batch of new ids alone writes it', async () => {
    await warehouse.commitBatch('deals', batch([], [reject(ID(1)), reject(ID(2))]));
    const result = await warehouse.commitBatch('deals', batch([deal(1), deal(3)], [], 'run-2'));
    expect(result).toMatchObject({ written: 2, changed: 2 });
    expect((await quarantined()).map((r) => r.id)).toEqual([ID(2)]);
  });

  it('a sweep takes every record it lists out of quarantine, the unchanged ones it does not write included', async () => {
    await warehouse.commitBatch('deals', batch([deal(1)], []));
    await warehouse.commitBatch('deals', batch([], [reject(ID(1))]));
    const result = await warehouse.commitBatch('deals', {
      records: [deal(1)],
      checkpoint: checkpoint(null),
      stateKey: 'deals#reconcile',
      sweep: { key: 'deals#reconcile', fresh: true },
    });
    expect(result).toMatchObject({ written: 0 });
    expect(await quarantined()).toEqual([]);
  });

  it('a record both written and rejected by one batch stays in quarantine', async () => {
    await warehouse.commitBatch('deals', batch([], [reject(ID(1))]));
    await warehouse.commitBatch('deals', batch([deal(1)], [reject(ID(1))], 'run-2'));
    expect((await quarantined()).map((r) => [r.id, r.run_id])).toEqual([[ID(1), 'run-2']]);
  });

  it('quarantines nothing of a batch that fails', async () => {
    const broken = { ...deal(3), id: null } as unknown as ServiceRecord;
    await expect(warehouse.commitBatch('deals', batch([deal(1), broken], [reject(ID(2))]))).rejects.toMatchObject({
      code: 'warehouse_error',
    });
    expect(await quarantined()).toEqual([]);
  });

  it('counts the records in quarantine per resource', async () => {
    expect(await warehouse.rejectedCounts()).toEqual({});
    await warehouse.commitBatch('deals', batch([], [reject(ID(1)), reject(ID(2))]));
    await warehouse.commitBatch('companies', batch([], [reject('C00000000000000001')]));
    expect(await warehouse.rejectedCounts()).toEqual({ companies: 1, deals: 2 });
  });

  it('a rejected user is quarantined under users and not marked deleted by the complete listing; once listed valid it leaves', async () => {
    const user = (n: number): ServiceUser => ({
      id: `U${String(n).padStart(17, '0')}`,
      email: `u${n}@example.com`,
      name: `User ${n}`,
      is_active: true,
    });
    await warehouse.replaceUsers([user(1), user(2), user(3)], '2026-01-01T00:00:00Z');
    await warehouse.replaceUsers([user(1)], '2026-01-02T00:00:00Z', {
      rejects: [reject(user(2).id, 'email: must be a string')],
      runId: 'run-u',
    });
    expect(await warehouse.query(`SELECT id, _deleted_at FROM users ORDER BY id`)).toEqual([
      { id: user(1).id, _deleted_at: null },
      { id: user(2).id, _deleted_at: null },
      { id: user(3).id, _deleted_at: '2026-01-02T00:00:00.000000Z' },
    ]);
    expect(await quarantined()).toEqual([
      expect.objectContaining({ resource: 'users', id: user(2).id, reason: 'email: must be a string', run_id: 'run-u' }),
    ]);
    await warehouse.replaceUsers([user(1), user(2)], '2026-01-03T00:00:00Z', { rejects: [], runId: 'run-v' });
    expect(await quarantined()).toEqual([]);
  });

  it('a clean pass settles the entries of its window that it did not reject again: a broken id can leave no other way', async () => {
    const broken = (id: string, updatedAt: string) =>
      reject(id, 'id: must match ^[A-Za-z0-9]{18}$', JSON.stringify({ id, updated_at: updatedAt }));
    await warehouse.commitBatch(
      'deals',
      batch([], [broken('short1', '2026-01-03T00:00:00Z'), broken('short2', '2025-06-01T00:00:00Z'), reject(null)]),
    );
    // Another run's clean pass over records updated since 2026-01-01, which rejected short3 itself.
    await warehouse.commitBatch(
      'deals',
      batch([], [broken('short3', '2026-01-04T00:00:00Z')], 'run-2', { settlesQuarantine: { since: '2026-01-01T00:00:00Z' } }),
    );
    expect((await quarantined()).map((r) => r.id)).toEqual(['short2', 'short3', null]);
    // A complete listing settles everything it did not reject, an entry with no readable updated_at included.
    await warehouse.commitBatch('deals', batch([], [], 'run-3', { settlesQuarantine: { since: null } }));
    expect(await quarantined()).toEqual([]);
  });
});
