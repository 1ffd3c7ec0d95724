import { describe, expect, test } from 'vitest';
import { call, micros, useSimulators, walkList } from './helpers.js';

const start = useSimulators();
const DAY = 86_400_000;

/** An injected, hand-moved simulator clock. */
function manualClock(startMs: number): { now: () => number; advance: (ms: number) => void } {
  let t = startMs;
  return { now: () => t, advance: (ms) => (t += ms) };
}

const byName = (name: string) => ({ filter_groups: [{ conditions: [{ field: 'name', operator: 'equals', value: name }] }] });

describe('commitLagMs', () => {
  test('an update keeps its updated_at but reaches list, search and GET only after the lag; truth shows it at once', async () => {
    const clock = manualClock(Date.UTC(2025, 5, 1));
    const sim = await start({ now: clock.now, commitLagMs: 5_000 });
    const deal = sim.admin.truth().records.deals[0]!;
    const updated = sim.admin.updateRecord('deals', deal.id, { name: 'lagged name' });
    expect(sim.admin.truth().records.deals.find((r) => r.id === deal.id)).toEqual(updated);

    const readers = async () => ({
      one: (await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body,
      listed: (await walkList(sim, '/v1/deals/', { page_size: '200' })).find((r) => r.id === deal.id),
      since: await walkList(sim, '/v1/deals/', { updated_after: updated.updated_at }),
      found: (await call(sim, 'POST', '/v1/deals/search/', { body: byName('lagged name') })).body.results,
    });

    clock.advance(4_999);
    const early = await readers();
    expect(early.one).toEqual(deal);
    expect(early.listed).toEqual(deal);
    expect(early.since).toEqual([]);
    expect(early.found).toEqual([]);

    clock.advance(2); // now ≥ updated_at + lag (updated_at carries microseconds past the millisecond)
    const late = await readers();
    expect(late.one).toEqual(updated);
    expect(late.listed).toEqual(updated);
    expect(late.since).toEqual([updated]);
    expect(late.found).toEqual([updated]);
  });

  test('a create is invisible (404, not listed, not found) until the lag has passed', async () => {
    const clock = manualClock(Date.UTC(2025, 5, 1));
    const sim = await start({ now: clock.now, commitLagMs: 1_000 });
    const created = sim.admin.createRecord('companies', { name: 'まだ見えない社' });
    const missing = await call(sim, 'GET', `/v1/companies/${created.id}/`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    expect((await walkList(sim, '/v1/companies/')).some((r) => r.id === created.id)).toBe(false);
    expect((await call(sim, 'POST', '/v1/companies/search/', { body: byName('まだ見えない社') })).body.results).toEqual([]);
    expect(sim.admin.truth().records.companies.some((r) => r.id === created.id)).toBe(true);
    clock.advance(1_001);
    expect((await call(sim, 'GET', `/v1/companies/${created.id}/`)).body).toEqual(created);
    expect((await walkList(sim, '/v1/companies/')).at(-1)).toEqual(created);
  });

  test("with scope 'single' only the single GET lags: list and search show the change at once, a create is listed but 404", async () => {
    const clock = manualClock(Date.UTC(2025, 5, 1));
    const sim = await start({ now: clock.now, commitLagMs: 5_000, commitLagScope: 'single' });
    const deal = sim.admin.truth().records.deals[0]!;
    const updated = sim.admin.updateRecord('deals', deal.id, { name: 'listed first' });
    const created = sim.admin.createRecord('companies', { name: 'リストにだけ見える社' });
    expect((await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body).toEqual(deal);
    expect((await walkList(sim, '/v1/deals/', { page_size: '200' })).find((r) => r.id === deal.id)).toEqual(updated);
    expect((await call(sim, 'POST', '/v1/deals/search/', { body: byName('listed first') })).body.results).toEqual([updated]);
    expect((await call(sim, 'GET', `/v1/companies/${created.id}/`)).status).toBe(404);
    expect((await walkList(sim, '/v1/companies/')).at(-1)).toEqual(created);
    clock.advance(5_001);
    expect((await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body).toEqual(updated);
    expect((await call(sim, 'GET', `/v1/companies/${created.id}/`)).body).toEqual(created);
  });

  test('single GETs routed to a kept replica show records and summaries as they stood when it was kept, until routed back', async () => {
    const sim = await start();
    const [log] = sim.admin.truth().records['meeting-logs'];
    const before = (await call(sim, 'GET', `/v1/meeting-logs/${log!.id}/`)).body;
    sim.admin.keepReplica();
    const updated = sim.admin.updateRecord('meeting-logs', log!.id, { meeting_name: 'after the replica stopped' });
    sim.admin.generateSummaries(log!.id);
    const created = sim.admin.createRecord('companies', { name: 'レプリカにない社' });
    const gone = sim.admin.truth().records.deals[0]!;
    sim.admin.deleteRecord('deals', gone.id);
    sim.admin.routeSingleViews('replica');
    expect((await call(sim, 'GET', `/v1/meeting-logs/${log!.id}/`)).body).toEqual(before);
    expect((await call(sim, 'GET', `/v1/companies/${created.id}/`)).status).toBe(404);
    expect((await call(sim, 'GET', `/v1/deals/${gone.id}/`)).body).toEqual(gone);
    // Lists read the primary.
    expect((await walkList(sim, '/v1/meeting-logs/', { page_size: '200' })).find((r) => r.id === log!.id)).toMatchObject({
      updated_at: updated.updated_at,
    });
    sim.admin.routeSingleViews('primary');
    const now = (await call(sim, 'GET', `/v1/meeting-logs/${log!.id}/`)).body;
    expect(now).toMatchObject({ updated_at: updated.updated_at, summaries: sim.admin.truth().summaries[log!.id] });
  });

  test('an activity moves its parent only after the lag; successive changes surface one by one', async () => {
    const clock = manualClock(Date.UTC(2025, 5, 1));
    const sim = await start({ now: clock.now, commitLagMs: 10_000 });
    const deal = sim.admin.truth().records.deals[3]!;
    const { parent } = sim.admin.recordActivity('meeting-logs', deal.id);
    expect(parent.properties['activity_count']).toBe(Number(deal.properties['activity_count']) + 1);
    clock.advance(5_000);
    const second = sim.admin.updateRecord('deals', deal.id, { name: 'second change' });
    expect((await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body).toEqual(deal);
    clock.advance(5_001); // the activity's bump is visible, the rename not yet
    expect((await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body).toEqual(parent);
    clock.advance(5_000);
    expect((await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body).toEqual(second);
  });

  test('replicas serving reads at different lags: an update read, then the version before it; a create listed, then 404', async () => {
    const clock = manualClock(Date.UTC(2025, 5, 1));
    const sim = await start({ now: clock.now, commitLagMs: 10_000, readReplicas: 3 });
    const deal = sim.admin.truth().records.deals[0]!;
    const updated = sim.admin.updateRecord('deals', deal.id, { name: 'on one replica' });
    const created = sim.admin.createRecord('companies', { name: '一台にだけある社' });
    clock.advance(5_001); // past half the lag: the middle replica has both changes, the last neither
    const read = async () => (await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body;
    sim.admin.setReadReplicas(3, 1);
    expect(await read()).toEqual(updated);
    expect((await walkList(sim, '/v1/companies/')).at(-1)).toEqual(created);
    sim.admin.setReadReplicas(3, 2);
    expect(await read()).toEqual(deal);
    expect((await call(sim, 'GET', `/v1/companies/${created.id}/`)).status).toBe(404);
    sim.admin.setReadReplicas(3, 0);
    expect((await call(sim, 'GET', `/v1/companies/${created.id}/`)).body).toEqual(created);
    // Drawn at random for each request: both versions are served, in no order.
    sim.admin.setReadReplicas(3);
    const seen = new Set<string>();
    for (let i = 0; i < 40; i++) seen.add(String(((await read()) as { properties: { name: string } }).properties.name));
    expect(seen).toEqual(new Set([deal.properties['name'], 'on one replica']));
    clock.advance(5_000); // every replica has both
    sim.admin.setReadReplicas(3, 2);
    expect(await read()).toEqual(updated);
    expect(() => sim.admin.setReadReplicas(0)).toThrow();
    expect(() => sim.admin.setReadReplicas(3, 3)).toThrow();
  });

  test('setCommitLag turns it on and off for later changes; the default is no lag', async () => {
    const clock = manualClock(Date.UTC(2025, 5, 1));
    const sim = await start({ now: clock.now });
    const [a, b] = sim.admin.truth().records.companies;
    const direct = sim.admin.updateRecord('companies', a!.id, { name: 'at once' });
    expect((await call(sim, 'GET', `/v1/companies/${a!.id}/`)).body).toEqual(direct);
    sim.admin.setCommitLag(60_000);
    sim.admin.updateRecord('companies', b!.id, { name: 'later' });
    expect((await call(sim, 'GET', `/v1/companies/${b!.id}/`)).body).toEqual(b);
    sim.admin.setCommitLag(0);
    const now = sim.admin.updateRecord('companies', b!.id, { name: 'now' });
    expect((await call(sim, 'GET', `/v1/companies/${b!.id}/`)).body).toEqual(now);
    expect(() => sim.admin.setCommitLag(-1)).toThrow();
  });
});

describe('Date header', () => {
  test('by default comes from the simulator clock (now), not the wall clock', async () => {
    const t = Date.UTC(2024, 1, 29, 12, 34, 56, 789);
    const sim = await start({ now: () => t });
    const reply = await call(sim, 'GET', '/v1/deals/');
    expect(reply.headers.get('date')).toBe(new Date(t).toUTCString());
    expect(Date.parse(reply.headers.get('date')!)).toBe(Math.floor(t / 1000) * 1000);
  });

  test('dateSkewMs shifts it (on errors and faults too); omitDate sends none; setClock merges', async () => {
    const t = Date.UTC(2025, 5, 1, 0, 0, 0);
    const sim = await start({ now: () => t, clock: { dateSkewMs: DAY } });
    const ahead = new Date(t + DAY).toUTCString();
    expect((await call(sim, 'GET', '/v1/deals/')).headers.get('date')).toBe(ahead);
    expect((await call(sim, 'GET', '/v1/deals/', { key: null })).headers.get('date')).toBe(ahead);
    sim.admin.failNext(1, 'error503');
    expect((await call(sim, 'GET', '/v1/deals/')).headers.get('date')).toBe(ahead);

    sim.admin.setClock({ omitDate: true });
    for (const kind of ['rateLimit', 'html', 'malformed'] as const) {
      sim.admin.failNext(1, kind);
      const res = await fetch(`${sim.url}/v1/deals/`);
      await res.text();
      expect(res.headers.get('date'), kind).toBeNull();
    }
    const bare = await call(sim, 'GET', '/v1/deals/');
    expect(bare.status).toBe(200);
    expect(bare.headers.get('date')).toBeNull();

    sim.admin.setClock({ omitDate: false }); // the skew is kept
    expect((await call(sim, 'GET', '/v1/deals/')).headers.get('date')).toBe(ahead);
    sim.admin.setClock({ dateSkewMs: -3_600_000 });
    expect((await call(sim, 'GET', '/v1/deals/')).headers.get('date')).toBe(new Date(t - 3_600_000).toUTCString());
  });
});

describe('setUpdatedAt', () => {
  test('moves updated_at backwards without touching values; the list re-sorts and updated_after no longer returns it', async () => {
    const sim = await start();
    const before = sim.admin.truth().records.deals;
    const newest = before.at(-1)!;
    const view = sim.admin.setUpdatedAt('deals', newest.id, '2020-01-01T00:00:00.000001Z');
    expect(micros(view.updated_at)).toBe(micros('2020-01-01T00:00:00.000001Z'));
    const after = sim.admin.truth().records.deals;
    expect(after[0]).toEqual({ ...newest, updated_at: view.updated_at });
    expect((await call(sim, 'GET', `/v1/deals/${newest.id}/`)).body).toEqual(after[0]);
    const listed = await walkList(sim, '/v1/deals/', { page_size: '200' });
    expect(listed[0]!.id).toBe(newest.id);
    const since = await walkList(sim, '/v1/deals/', { updated_after: before.at(-2)!.updated_at });
    expect(since.map((r) => r.id)).toEqual([before.at(-2)!.id]);
    expect(() => sim.admin.setUpdatedAt('deals', newest.id, 'not a time')).toThrow();
  });
});
