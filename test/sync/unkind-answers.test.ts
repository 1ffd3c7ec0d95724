// A service as unkind as the spec allows in what it answers: values at the ends of the calendar, users and
// definitions listed oddly, text DuckDB cannot hold, single views behind their list, errors with a success status.
import { afterEach, describe, expect, it } from 'vitest';
import type { SalesApi } from '../../src/api/types.js';
import { DEFAULT_PAGE_SIZE } from '../../src/api/client.js';
import type { PropertyDefinition } from '../../src/core/types.js';
import { runReconcile, runSync } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { FOUR_PAGES_OF_DEALS, startHarness, type Harness } from '../support/harness.js';
import { startTamperProxy } from '../support/tamper-proxy.js';
import { wrapApi } from '../support/wrap-api.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SIZE = FOUR_PAGES_OF_DEALS;
const MINUTE = 60_000;

describe('dates at the ends of the calendar (the spec: a date, a date-time)', () => {
  it('a date in year 0 and date-times an offset puts in year 0 or 10000 (in UTC) fill their typed columns', async () => {
    harness = await startHarness({ seed: 65, size: SIZE });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const deals = harness.sim.admin.truth().records.deals;
    const inUtc = deals.filter((d) => d.updated_at.endsWith('Z'));
    harness.sim.admin.updateRecord('deals', inUtc[0]!.id, { dA7vL2nR: '0000-01-01' });
    harness.sim.admin.updateRecord('deals', inUtc[1]!.id, { dT5wY8cE: '0001-01-01T00:00:00+09:00' });
    harness.sim.admin.updateRecord('deals', inUtc[2]!.id, { dT5wY8cE: '9999-12-31T23:00:00-09:00' });
    expect((await harness.sync({ resources: ['deals'] })).results[0]).toMatchObject({ outcome: 'succeeded', rejected: 0 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
    const ids = inUtc.slice(0, 3).map((d) => `'${d.id}'`);
    const typed = await harness
      .env()
      .warehouse.query(
        `SELECT count(*)::INTEGER AS n FROM deals WHERE id IN (${ids.join(', ')}) AND coalesce("dA7vL2nR", "dT5wY8cE") IS NULL`,
      );
    expect(typed).toEqual([{ n: 0 }]);
  });
});

describe('instants no TIMESTAMPTZ column holds', () => {
  it("a date-time property before year 0000 in UTC or past DuckDB's last instant is a NULL cell, not a batch that fails for good", async () => {
    harness = await startHarness({ seed: 70, size: SIZE });
    const env = harness.env();
    const [early, late] = harness.sim.admin.truth().records.deals;
    const far: Record<string, string> = { [early!.id]: '0000-01-01T00:00:00+01:00', [late!.id]: '999999-01-01T00:00:00Z' };
    // The simulator keeps its dates in range; the spec says only "a date-time": the answers carry these instead.
    const makeApi = (): SalesApi => {
      const api = env.deps.makeApi();
      return wrapApi(api, {
        async *listPages(resource, options) {
          for await (const page of api.listPages(resource, options)) {
            yield {
              ...page,
              results: page.results.map((r) => (far[r.id] ? { ...r, properties: { ...r.properties, dT5wY8cE: far[r.id]! } } : r)),
            };
          }
        },
      });
    };
    for (let run = 0; run < 2; run++) {
      const report = await runSync({ ...env.deps, makeApi }, env.settings, { resources: ['deals'], mode: 'full', concurrency: 1 });
      expect(report.results[0]).toMatchObject({ outcome: 'succeeded', rejected: 0 });
    }
    const cells = await env.warehouse.query(
      `SELECT "dT5wY8cE" AS cell, _properties->>'dT5wY8cE' AS sent FROM deals WHERE id IN ('${early!.id}', '${late!.id}') ORDER BY sent`,
    );
    expect(cells).toEqual([
      { cell: null, sent: '0000-01-01T00:00:00+01:00' },
      { cell: null, sent: '999999-01-01T00:00:00Z' },
    ]);
  });
});

describe('a users list that answers empty', () => {
  it('marks no user deleted: the warehouse keeps the users it had', async () => {
    harness = await startHarness({ seed: 69, size: SIZE });
    expect((await harness.sync({ resources: ['users'] })).ok).toBe(true);
    let empty = true;
    const proxy = await startTamperProxy(harness.url, (path, body) =>
      path === '/v1/users/' && empty ? { ...(body as object), results: [], paging: { next: null } } : undefined,
    );
    try {
      expect((await harness.sync({ resources: ['users'], config: { baseUrl: proxy.url } })).ok).toBe(true);
      const warehouse = harness.env().warehouse;
      expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM users WHERE _deleted_at IS NOT NULL`)).toEqual([{ n: 0 }]);
      empty = false;
      await expectMirrorsTruth(warehouse, harness.sim, { resources: [], users: true });
    } finally {
      await proxy.close();
    }
  });
});

describe('a users list under an offset cursor (the spec says only that it pages by cursor)', () => {
  it('the user a listing stepped over, when one was removed behind its cursor, stays live; the removed one is marked by the next listing', async () => {
    harness = await startHarness({ seed: 70, size: { ...SIZE, users: 450 }, usersCursorKind: 'offset' });
    expect((await harness.sync({ resources: ['users'] })).ok).toBe(true);
    let removed: string | undefined;
    let pages = 0;
    const proxy = await startTamperProxy(harness.url, (path, body) => {
      const { results } = body as { results: { id: string }[] };
      // Not the sync's one-user probe of the key: a page of the listing.
      if (path !== '/v1/users/' || results.length !== DEFAULT_PAGE_SIZE) return undefined;
      pages += 1;
      // The first page was given: removing its first user shifts the rest one place back under the cursor.
      if (removed === undefined) {
        removed = results[0]!.id;
        harness!.sim.admin.removeUser(removed);
      }
      return undefined;
    });
    try {
      const moving = await harness.sync({ resources: ['users'], config: { baseUrl: proxy.url } });
      expect(moving.ok).toBe(true);
      expect(pages).toBe(2);
      const warehouse = () => harness!.env().warehouse;
      // The listing gave the removed user before it went, and stepped over another, who is not gone.
      expect(await warehouse().query(`SELECT id FROM users WHERE _deleted_at IS NOT NULL`)).toEqual([]);
      expect(moving.results.find((r) => r.resource === 'users')!.details).toBe(1);
      expect((await harness.sync({ resources: ['users'], config: { baseUrl: proxy.url } })).ok).toBe(true);
      expect(await warehouse().query(`SELECT id FROM users WHERE _deleted_at IS NOT NULL`)).toEqual([{ id: removed }]);
      await expectMirrorsTruth(warehouse(), harness.sim, { resources: [], users: true });
    } finally {
      await proxy.close();
    }
  });
});

describe('definitions listed twice (the spec does not say an api_name is listed once)', () => {
  it('a property listed twice with two types, in an order that alternates, keeps one column and one type sync after sync', async () => {
    harness = await startHarness({ seed: 64, size: SIZE });
    let calls = 0;
    const proxy = await startTamperProxy(harness.url, (path, body) => {
      if (path !== '/v1/deals/properties/') return undefined;
      const { results } = body as { results: PropertyDefinition[] };
      calls += 1;
      const twice = { ...results.find((d) => d.api_name === 'dK3mP9xQ')!, property_type: 'text' };
      return { results: calls % 2 ? [...results, twice] : [twice, ...results] };
    });
    try {
      for (let run = 1; run <= 4; run += 1) {
        harness.sim.admin.mutateRandom(5, run, ['update']);
        expect((await harness.sync({ resources: ['deals'], config: { baseUrl: proxy.url } })).ok).toBe(true);
      }
      const warehouse = harness.env().warehouse;
      expect(await warehouse.query(`SELECT count(*)::INTEGER AS n FROM property_type_changes`)).toEqual([{ n: 0 }]);
      expect(
        await warehouse.query(`SELECT column_name FROM duckdb_columns() WHERE table_name = 'deals' AND column_name ILIKE 'dK3mP9xQ%'`),
      ).toEqual([{ column_name: 'dK3mP9xQ' }]);
      await expectMirrorsTruth(warehouse, harness.sim, { resources: ['deals'] });
    } finally {
      await proxy.close();
    }
  });
});

describe('text the warehouse cannot hold as sent', () => {
  it('a value and an option label cut inside an emoji (a lone surrogate, valid JSON) are stored with U+FFFD, and the resource keeps syncing', async () => {
    harness = await startHarness({ seed: 62, size: SIZE });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const cut = '商談メモ😀'.slice(0, 5);
    const deals = harness.sim.admin.truth().records.deals;
    for (const deal of deals.slice(0, 10)) harness.sim.admin.updateRecord('deals', deal.id, { name: `renamed ${deal.id}` });
    harness.sim.admin.updateRecord('deals', deals[20]!.id, { name: cut });
    const stage = harness.sim.admin.truth().properties.deals.find((d) => d.api_name === 'stage')!;
    harness.sim.admin.updatePropertyOptions('deals', 'stage', [...stage.options!, { value: 'cut_label', label: cut }]);
    const report = await harness.sync({ resources: ['deals'] });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', rejected: 0 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
    expect(await harness.env().warehouse.query(`SELECT name FROM deals WHERE id = '${deals[20]!.id}'`)).toEqual([
      { name: '商談メモ\uFFFD' },
    ]);
    expect(
      await harness.env().warehouse.query(`SELECT label FROM property_options WHERE resource = 'deals' AND value = 'cut_label'`),
    ).toEqual([{ label: '商談メモ\uFFFD' }]);
  });
});

describe('updated_after read to fewer fraction digits (the spec: a timestamp, its exact format not shown)', () => {
  it.each([
    [3, 1],
    [0, 2],
  ])(
    'a service that refuses updated_after with more than %i fraction digits: incremental syncs send it floored (%i refusals a run), equal to the truth',
    async (digits, refusals) => {
      harness = await startHarness({ seed: 66, size: SIZE, updatedAfterDigits: digits });
      expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
      for (const round of [1, 2]) {
        harness.sim.admin.mutateRandom(30, round, ['update', 'create']);
        harness.sim.admin.resetStats();
        const report = await harness.sync({ resources: ['deals'] });
        expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
        expect(harness.sim.admin.stats().byStatus['400']).toBe(refusals);
        await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
      }
    },
  );
});

describe('single views wrapped (the spec leaves the shape of a single view unshown)', () => {
  it.each(['data', 'results'] as const)(
    "single views given as '%s': meeting logs are written with their summaries, and a reconcile confirms a deletion",
    async (shape) => {
      harness = await startHarness({ seed: 83, size: SIZE, singleViewShape: shape });
      expect((await harness.sync({ resources: ['deals', 'meeting-logs'] })).ok).toBe(true);
      await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals', 'meeting-logs'] });
      const [gone] = harness.sim.admin.truth().records.deals;
      harness.sim.admin.deleteRecord('deals', gone!.id);
      const env = harness.env();
      const swept = await runReconcile(env.deps, env.settings, { resources: ['deals'], concurrency: 1 });
      expect(swept.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 1 });
      await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals', 'meeting-logs'] });
    },
  );
});

describe("property definitions listed in pages or in other shapes (the spec shows only deals' listing, and bounds none)", () => {
  it.each([{ pageSize: 4, shape: 'results' }, { pageSize: 3, shape: 'data' }, { shape: 'array' }] as const)(
    'definitions listed as %o: every property gets its column, and the warehouse equals the truth',
    async (listing) => {
      harness = await startHarness({ seed: 87, size: SIZE, definitionsListing: listing });
      const truth = harness.sim.admin.truth().properties;
      // A listing of one page would not tell the cases apart.
      expect(truth.deals.length).toBeGreaterThan(2 * (listing.pageSize ?? 1));
      expect((await harness.sync()).ok).toBe(true);
      await expectMirrorsTruth(harness.env().warehouse, harness.sim);
      harness.sim.admin.addProperty('companies', { display_name: '紹介元', property_type: 'text' });
      harness.sim.admin.mutateRandom(30, 4, ['update', 'create', 'activity']);
      expect((await harness.sync()).ok).toBe(true);
      await expectMirrorsTruth(harness.env().warehouse, harness.sim);
    },
  );
});

describe('a single view behind its list (the spec promises no consistency between them)', () => {
  it('a meeting log listed but whose single view answers not_found once is written, with its summaries, by the same sync', async () => {
    harness = await startHarness({ seed: 55, size: SIZE });
    const [log] = harness.sim.admin.truth().records['meeting-logs'];
    harness.sim.admin.failNext(1, 'notFound', `/v1/meeting-logs/${log!.id}/`);
    const report = await harness.sync({ resources: ['meeting-logs'] });
    expect(harness.sim.admin.stats().faults.notFound).toBe(1);
    // Left out of its batch, so that pass had not seen its whole window: the next pass listed it again.
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 2 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['meeting-logs'] });
  });

  it('a meeting log whose single view never stops answering not_found is written from its list row on the second pass: the sync settles and a reconcile marks deletions', async () => {
    harness = await startHarness({ seed: 68, size: SIZE });
    expect((await harness.sync({ resources: ['meeting-logs'] })).ok).toBe(true);
    const deal = harness.sim.admin.truth().records.deals[0]!;
    const { activity: stuck } = harness.sim.admin.recordActivity('meeting-logs', deal.id);
    harness.sim.admin.failNext(100_000, 'notFound', `/v1/meeting-logs/${stuck.id}/`);
    const report = await harness.sync({ resources: ['meeting-logs'] });
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, passes: 2 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['meeting-logs'] });
    const [gone] = harness.sim.admin.truth().records['meeting-logs'];
    harness.sim.admin.deleteRecord('meeting-logs', gone!.id);
    const env = harness.env();
    const swept = await runReconcile(env.deps, env.settings, { resources: ['meeting-logs'], concurrency: 1 });
    expect(swept.results[0]).toMatchObject({ outcome: 'succeeded', deleted: 1 });
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['meeting-logs'] });
  });

  it('a meeting log whose single view shows an older version than its list row is not written stale: the second pass writes its list row', async () => {
    let clock = Date.parse('2026-06-01T00:00:00Z');
    harness = await startHarness({ seed: 56, size: SIZE, now: () => clock });
    expect((await harness.sync({ resources: ['meeting-logs'] })).ok).toBe(true);
    const [behind, ahead] = harness.sim.admin.truth().records['meeting-logs'];
    // The single view of the first lags an hour behind the list; a change ten minutes later bounds the watermark.
    harness.sim.admin.setCommitLag(60 * MINUTE, 'single');
    clock += MINUTE;
    harness.sim.admin.updateRecord('meeting-logs', behind!.id, { meeting_name: 'changed while a replica lags' });
    harness.sim.admin.setCommitLag(0);
    clock += 10 * MINUTE;
    harness.sim.admin.updateRecord('meeting-logs', ahead!.id, { meeting_name: 'changed later' });
    clock += MINUTE;
    // Every pass sees the single view behind: the first leaves the log out, the second writes its list row.
    expect((await harness.sync({ resources: ['meeting-logs'] })).results[0]).toMatchObject({
      outcome: 'succeeded',
      settled: true,
      passes: 2,
    });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['meeting-logs'] });
    clock += 2 * 60 * MINUTE;
    expect((await harness.sync({ resources: ['meeting-logs'] })).results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['meeting-logs'] });
  });
});

describe('JSON laid out otherwise (the spec fixes neither member order nor spacing)', () => {
  it('lists naming paging first, in indented JSON: a sync mirrors the truth and asks for each page once, as for compact JSON', async () => {
    const requestsUnder = async (jsonLayout: 'compact' | 'unkind') => {
      harness = await startHarness({ seed: 47, size: SIZE, jsonLayout });
      expect((await harness.sync()).ok).toBe(true);
      await expectMirrorsTruth(harness.env().warehouse, harness.sim);
      const { byRoute } = harness.sim.admin.stats();
      await harness.close();
      harness = undefined;
      return byRoute;
    };
    const compact = await requestsUnder('compact');
    const unkind = await requestsUnder('unkind');
    // Every page read ahead from the text found the cursor the parsed page confirmed: no request was wasted.
    expect(unkind['GET /v1/deals/']).toBe(Math.ceil(SIZE.deals / DEFAULT_PAGE_SIZE));
    expect(unkind).toEqual(compact);
  });
});

describe('an error answered with a success status (the spec leaves the statuses of not_found and internal_error unshown)', () => {
  it("a meeting log single view answered 200 with the service's internal_error envelope is retried, not quarantined", async () => {
    harness = await startHarness({ seed: 58, size: SIZE });
    expect((await harness.sync({ resources: ['meeting-logs'] })).ok).toBe(true);
    const [log] = harness.sim.admin.truth().records['meeting-logs'];
    harness.sim.admin.updateRecord('meeting-logs', log!.id, { meeting_name: 'changed before a 200 error' });
    harness.sim.admin.failNext(1, 'error200', `/v1/meeting-logs/${log!.id}/`);
    const report = await harness.sync({ resources: ['meeting-logs'] });
    expect(harness.sim.admin.stats().faults.error200).toBe(1);
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true, rejected: 0 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['meeting-logs'] });
  });

  it('rate_limited answered under status 503 is waited out as a 429 (the key paused), not retried as a server error', async () => {
    harness = await startHarness({ seed: 63, size: SIZE, faults: { rateLimitRetryAfterSeconds: 0 } });
    harness.sim.admin.failNext(2, 'rateLimit503', '/v1/deals/');
    const report = await harness.sync({ resources: ['deals'] });
    expect(harness.sim.admin.stats().faults.rateLimit503).toBe(2);
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', rateLimited: 2 });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });

  it("a list page answered 200 with the service's internal_error envelope is retried like a 500", async () => {
    harness = await startHarness({ seed: 59, size: SIZE });
    harness.sim.admin.failNext(2, 'error200', '/v1/deals/');
    const report = await harness.sync({ resources: ['deals'] });
    expect(harness.sim.admin.stats().faults.error200).toBe(2);
    expect(report.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });
});
