import { afterEach, describe, expect, it } from 'vitest';
import type { PropertyPolicy } from '../../src/core/property-policy.js';
import type { RecordResourceName } from '../../src/core/resources.js';
import { runReconcile } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';
import { expectHistoryInvariant } from '../support/history-invariant.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SMALL = { deals: 40, companies: 20, contacts: 40, meetingLogs: 5, contactActivities: 10, users: 4 };
const LINKED: RecordResourceName[] = ['deals', 'companies', 'contacts'];
const TABLES = ['deals', 'companies', 'contacts'];

async function reconcile(h: Harness, resources: RecordResourceName[]) {
  const env = h.env();
  const report = await runReconcile(env.deps, env.settings, { resources, deep: false, concurrency: 3 });
  expect(report.results.every((r) => r.outcome === 'succeeded')).toBe(true);
}

describe('SCD2 history against the simulator', () => {
  it('after a link change found by reconcile, a deletion and a restore, every current version equals its live row and each step has its source', async () => {
    harness = await startHarness({ seed: 41, size: SMALL });
    expect((await harness.sync({ resources: LINKED })).ok).toBe(true);
    const warehouse = () => harness!.env().warehouse;
    await expectHistoryInvariant(warehouse(), TABLES);

    const truth = harness.sim.admin.truth();
    const contact = truth.records.contacts[0]!;
    const company = truth.records.companies.find((c) => c.id !== contact.properties.account_id)!;
    const gone = truth.records.deals[0]!;
    const back = truth.records.contacts[1]!;
    harness.sim.admin.changeLink('contacts', contact.id, 'account_id', company.id);
    harness.sim.admin.deleteRecord('deals', gone.id);
    // A sync cannot see either: updated_at did not move, and the list never says what vanished.
    expect((await harness.sync({ resources: LINKED })).ok).toBe(true);
    await reconcile(harness, LINKED);
    await expectMirrorsTruth(warehouse(), harness.sim, { resources: LINKED });
    await expectHistoryInvariant(warehouse(), TABLES);

    // A row marked deleted whose record is listed again (a sweep that once missed it): reconcile restores it.
    await warehouse().completeSweep('contacts', {
      key: 'contacts#test',
      stateKey: 'contacts#test',
      deletedIds: [back.id],
      deletedAt: new Date().toISOString(),
      completedAt: new Date().toISOString(),
    });
    await expectHistoryInvariant(warehouse(), TABLES);
    await reconcile(harness, ['contacts']);
    await expectHistoryInvariant(warehouse(), TABLES);

    const steps = async (table: string, id: string) =>
      (
        await warehouse().query(
          `SELECT source, valid_from_basis AS basis, deleted, is_current, properties->>'account_id' AS account
           FROM ${table}_history WHERE id = '${id}' ORDER BY change_seq`,
        )
      ).map((v) => [v.source, v.basis, v.deleted, v.is_current, v.account]);
    expect(await steps('contacts', contact.id)).toEqual([
      ['incremental', 'updated_at', false, false, contact.properties.account_id],
      ['reconcile', 'observed', false, true, company.id],
    ]);
    expect((await steps('deals', gone.id)).map((s) => s.slice(0, 4))).toEqual([
      ['incremental', 'updated_at', false, false],
      ['deleted', 'observed', true, true],
    ]);
    expect((await steps('contacts', back.id)).map((s) => s.slice(0, 4))).toEqual([
      ['incremental', 'updated_at', false, false],
      ['deleted', 'observed', true, false],
      ['restored', 'observed', false, true],
    ]);

    // The same steps in the feed, with the link's old and new value.
    const feed = await warehouse().readChanges({ resources: ['contacts', 'deals'], since: { cursor: 0n } });
    const link = feed.changes.filter((c) => c.id === contact.id && c.kind === 'update');
    expect(link.map((c) => [c.source, c.changed_properties])).toEqual([['reconcile', ['account_id']]]);
    expect(feed.changes.filter((c) => c.id === gone.id).map((c) => c.kind)).toEqual(['insert', 'delete']);
    expect(feed.changes.filter((c) => c.id === back.id).map((c) => c.kind)).toEqual(['insert', 'delete', 'restore']);
  });

  it('a property policy that excludes a property versions no record: the walk after the purge finds each one unchanged', async () => {
    harness = await startHarness({ seed: 31, size: SMALL });
    expect((await harness.sync({ resources: ['contacts'] })).ok).toBe(true);
    const warehouse = () => harness!.env().warehouse;
    const [{ last }] = (await warehouse().query(`SELECT max(change_seq)::BIGINT AS last FROM changes`)) as [{ last: bigint }];
    const policy: PropertyPolicy = { contacts: { include: null, exclude: ['email'], hash: [] } };
    expect((await harness.sync({ resources: ['contacts'], config: { propertyPolicy: policy } })).ok).toBe(true);
    expect(await warehouse().query(`SELECT kind, count(*)::INTEGER AS n FROM changes WHERE change_seq > ${last} GROUP BY kind`)).toEqual(
      [],
    );
    expect(await warehouse().query(`SELECT count(*)::INTEGER AS n FROM contacts WHERE _content_hash IS NULL`)).toEqual([{ n: 0 }]);
    await expectHistoryInvariant(warehouse(), ['contacts']);
  });

  it('after a purge, a number DuckDB and JavaScript write differently (1e21, 1e+21) is found unchanged: the walk versions no record', async () => {
    harness = await startHarness({ seed: 32, size: SMALL });
    // Past what a write accepts, but the spec sets no bound on what a record holds: a text turned number carries it.
    const { api_name: big } = harness.sim.admin.addProperty('deals', { display_name: 'Lifetime value', property_type: 'text' });
    const [deal] = harness.sim.admin.truth().records.deals;
    harness.sim.admin.updateRecord('deals', deal!.id, { [big]: '1e21' });
    harness.sim.admin.changePropertyType('deals', big, 'number');
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const warehouse = () => harness!.env().warehouse;
    const [{ last }] = (await warehouse().query(`SELECT max(change_seq)::BIGINT AS last FROM changes`)) as [{ last: bigint }];
    const policy: PropertyPolicy = { deals: { include: null, exclude: ['name'], hash: [] } };
    expect((await harness.sync({ resources: ['deals'], config: { propertyPolicy: policy } })).ok).toBe(true);
    expect(await warehouse().query(`SELECT id, kind FROM changes WHERE change_seq > ${last}`)).toEqual([]);
    expect(await warehouse().query(`SELECT CAST(_properties AS VARCHAR) AS p FROM deals WHERE id = '${deal!.id}'`)).toEqual([
      { p: expect.stringContaining(`"${big}":1e21`) },
    ]);
    await expectHistoryInvariant(warehouse(), ['deals']);
  });
});
