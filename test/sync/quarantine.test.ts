import { afterEach, describe, expect, it } from 'vitest';
import { runReconcile } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SIZE = { deals: 2400, companies: 40, contacts: 40, meetingLogs: 30, contactActivities: 20, users: 6 };

const quarantined = (h: Harness) =>
  h.env().warehouse.query(`SELECT resource, id, reason, run_id IS NOT NULL AS has_run FROM rejected_records ORDER BY resource, id`);

describe('one bad record never stops its resource', () => {
  it('an object-valued property among thousands: the others are exact, the bad one is quarantined, and the next walk that sees it fixed writes it', async () => {
    harness = await startHarness({ seed: 61, size: SIZE });
    const bad = harness.sim.admin.truth().records.deals[1234]!.id;
    harness.sim.admin.corruptRecord('deals', bad, 'object_property');
    const report = await harness.sync();
    expect(report.results.find((r) => r.resource === 'deals')).toMatchObject({ outcome: 'succeeded_with_rejects', rejected: 1 });
    expect(report.results.filter((r) => r.resource !== 'deals').every((r) => r.outcome === 'succeeded')).toBe(true);
    const rows = await quarantined(harness);
    expect(rows).toEqual([{ resource: 'deals', id: bad, reason: expect.stringMatching(/properties\./), has_run: true }]);
    const raw = await harness.env().warehouse.query(`SELECT raw FROM rejected_records`);
    expect(JSON.parse(String(raw[0]!.raw))).toMatchObject({ id: bad });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { exclude: [bad] });
    const runs = await harness
      .env()
      .warehouse.query(`SELECT outcome, rejected FROM sync_runs WHERE resource = 'deals' ORDER BY started_at DESC LIMIT 1`);
    expect(runs.map((r) => [r.outcome, Number(r.rejected)])).toEqual([['succeeded_with_rejects', 1]]);

    // Fixed at the service (and changed, so an incremental walk sees it): written, and out of quarantine.
    harness.sim.admin.repairRecord('deals', bad);
    harness.sim.admin.updateRecord('deals', bad, { name: 'fixed' });
    const next = await harness.sync();
    expect(next.ok).toBe(true);
    expect(next.results.every((r) => r.outcome === 'succeeded')).toBe(true);
    expect(await quarantined(harness)).toEqual([]);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim);
  });

  it('a record fixed at the service without a new updated_at is written by the next incremental sync, which asks about it by its single view; one still broken stays, and its run says so', async () => {
    harness = await startHarness({ seed: 63, size: SIZE });
    const deals = harness.sim.admin.truth().records.deals;
    const [fixed, broken, shortId] = [deals[100]!.id, deals[200]!.id, deals[300]!.id];
    harness.sim.admin.corruptRecord('deals', fixed, 'object_property');
    harness.sim.admin.corruptRecord('deals', broken, 'object_property');
    harness.sim.admin.corruptRecord('deals', shortId, 'short_id');
    expect((await harness.sync({ resources: ['deals'] })).results[0]).toMatchObject({ outcome: 'succeeded_with_rejects', rejected: 3 });
    harness.sim.admin.resetStats();

    // Rendered whole again, as a fix of how the service renders it would: its values, and so its updated_at, stay.
    harness.sim.admin.repairRecord('deals', fixed);
    const next = await harness.sync({ resources: ['deals'] });
    // The 17-character id names no single view: only the two record ids are asked about.
    expect(harness.sim.admin.stats().byRoute['GET /v1/deals/{id}/']).toBe(2);
    expect(next.results[0]).toMatchObject({ outcome: 'succeeded_with_rejects', rejected: 1, settled: true });
    expect((await quarantined(harness)).map((r) => r.id).sort()).toEqual([broken, shortId.slice(0, 17)].sort());
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'], exclude: [broken, shortId] });

    // A second look the service fails to answer fails no walk: the record waits in quarantine for the next run.
    harness.sim.admin.repairRecord('deals', broken);
    harness.sim.admin.failNext(20, 'error500', `/v1/deals/${broken}/`);
    const failed = await harness.sync({ resources: ['deals'], config: { retryLimit: 1, retryBaseDelayMs: 1 } });
    expect(failed.results[0]).toMatchObject({ outcome: 'succeeded', rejected: 0 });
    expect((await quarantined(harness)).map((r) => r.id)).toContain(broken);
    harness.sim.admin.clearFaults();
    expect((await harness.sync({ resources: ['deals'] })).results[0]).toMatchObject({ outcome: 'succeeded' });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'], exclude: [shortId] });
  });

  it('ids and timestamps no warehouse can hold are quarantined with the record id, never the whole batch', async () => {
    harness = await startHarness({ seed: 62, size: SIZE });
    const deals = harness.sim.admin.truth().records.deals;
    const shortId = deals[10]!.id;
    const leap = deals[20]!.id;
    const space = deals[30]!.id;
    harness.sim.admin.corruptRecord('deals', shortId, 'short_id');
    harness.sim.admin.corruptRecord('deals', leap, 'leap_second');
    harness.sim.admin.corruptRecord('deals', space, 'space_separator');
    const report = await harness.sync({ resources: ['deals'] });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded_with_rejects', rejected: 3 });
    const ids = (await quarantined(harness)).map((r) => r.id);
    expect(ids).toContain(shortId.slice(0, 17));
    expect(ids).toContain(leap);
    expect(ids).toContain(space);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'], exclude: [shortId, leap, space] });

    // A reconcile sees every record: once fixed, each is written without being changed again.
    for (const id of [shortId, leap, space]) harness.sim.admin.repairRecord('deals', id);
    const env = harness.env();
    expect((await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 })).results[0]?.outcome).toBe('succeeded');
    expect(await quarantined(harness)).toEqual([]);
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
  });

  it('a user with a null name stops neither the connection check nor any resource, and is not marked deleted', async () => {
    harness = await startHarness({ seed: 63, size: SIZE });
    expect((await harness.sync()).ok).toBe(true);
    const [first] = harness.sim.admin.truth().users;
    harness.sim.admin.corruptUser(first!.id, 'null_name');
    const report = await harness.sync();
    expect(report.results.find((r) => r.resource === 'users')).toMatchObject({ outcome: 'succeeded_with_rejects', rejected: 1 });
    expect(report.results.filter((r) => r.resource !== 'users').every((r) => r.outcome === 'succeeded')).toBe(true);
    expect((await quarantined(harness)).map((r) => [r.resource, r.id])).toEqual([['users', first!.id]]);
    const row = await harness.env().warehouse.query(`SELECT _deleted_at FROM users WHERE id = '${first!.id}'`);
    expect(row).toEqual([{ _deleted_at: null }]);
  });

  it('a user listed with an id that is no id (17 characters) could be any user: the listing marks no user deleted', async () => {
    harness = await startHarness({ seed: 64, size: SIZE });
    expect((await harness.sync({ resources: ['users'] })).ok).toBe(true);
    const [first] = harness.sim.admin.truth().users;
    harness.sim.admin.corruptUser(first!.id, 'short_id');
    const report = await harness.sync({ resources: ['users'] });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded_with_rejects', rejected: 1 });
    const marked = await harness.env().warehouse.query(`SELECT count(*)::INTEGER AS n FROM users WHERE _deleted_at IS NOT NULL`);
    expect(marked).toEqual([{ n: 0 }]);
    // Fixed, it is written again, and the listing, naming every user, settles its quarantine.
    harness.sim.admin.repairUser(first!.id);
    expect((await harness.sync({ resources: ['users'] })).results[0]).toMatchObject({ outcome: 'succeeded', rejected: 0 });
    expect(await quarantined(harness)).toEqual([]);
  });
});
