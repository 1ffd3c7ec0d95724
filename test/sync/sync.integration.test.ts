import { stat } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { ListOptions, SalesApi } from '../../src/api/types.js';
import { RECORD_RESOURCE_NAMES, resourceDescriptor, type RecordResourceName } from '../../src/core/resources.js';
import { parseInstantMicros, minusMs } from '../../src/core/time.js';
import { keyFingerprint } from '../../src/api/index.js';
import { DEFAULT_KEYS } from '../../src/simulator/index.js';
import { runSync } from '../../src/sync/index.js';
import type { ResourceProgress } from '../../src/sync/progress.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';
import { abortingAfterPages, wrapApi } from '../support/wrap-api.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SMALL = { deals: 450, companies: 150, contacts: 520, meetingLogs: 90, contactActivities: 260, users: 15 };

describe('sync against the simulator', () => {
  it('a first sync mirrors every resource field by field, summaries and users included', async () => {
    harness = await startHarness({ seed: 3, size: SMALL });
    const report = await harness.sync();
    expect(report.ok).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim);
  });

  it('an incremental sync after changes equals the truth and lists only ceil(changed/200) pages per resource', async () => {
    harness = await startHarness({ seed: 4, size: SMALL });
    expect((await harness.sync()).ok).toBe(true);
    const warehouse = harness.env().warehouse;
    const watermarks = new Map<RecordResourceName, string>();
    for (const resource of RECORD_RESOURCE_NAMES) watermarks.set(resource, (await warehouse.readState(resource)).watermark!);

    const logsBefore = new Map(harness.sim.admin.truth().records['meeting-logs'].map((r) => [r.id, r.updated_at]));
    harness.sim.admin.mutateRandom(260, 11, ['update', 'same-value', 'create', 'activity']);
    harness.sim.admin.resetStats();
    expect((await harness.sync()).ok).toBe(true);
    await expectMirrorsTruth(warehouse, harness.sim);

    const truth = harness.sim.admin.truth();
    const byRoute = harness.sim.admin.stats().byRoute;
    for (const resource of RECORD_RESOURCE_NAMES) {
      const since = parseInstantMicros(minusMs(watermarks.get(resource)!, harness.config.lookbackMs))!;
      const changed = truth.records[resource].filter((r) => parseInstantMicros(r.updated_at)! >= since).length;
      expect(byRoute[`GET /v1/${resourceDescriptor(resource).path}/`], `${resource}: ${changed} changed`).toBe(
        Math.max(1, Math.ceil(changed / 200)),
      );
    }
    // Meeting logs: one single view per new or changed log, none for the unchanged (boundary logs listed again included).
    const changedLogs = truth.records['meeting-logs'].filter((r) => logsBefore.get(r.id) !== r.updated_at).length;
    expect(byRoute['GET /v1/meeting-logs/{id}/'] ?? 0).toBe(changedLogs);
  });

  it('moves the watermark to the server time the walk started, so a change behind the cursor is caught next time', async () => {
    harness = await startHarness({ seed: 5, size: SMALL, listOrder: 'id' });
    const env = harness.env();
    const sim = harness.sim;
    let changedId: string | undefined;
    // Change a record the walk has already passed, while the walk is still going.
    const makeApi = (): SalesApi => {
      const api = env.deps.makeApi();
      return wrapApi(api, {
        async *listPages(resource: RecordResourceName, options?: ListOptions) {
          let page = 0;
          for await (const p of api.listPages(resource, options)) {
            yield p;
            page += 1;
            if (resource === 'deals' && page === 2 && !changedId) {
              changedId = p.results[0]!.id;
              sim.admin.updateRecord('deals', changedId, { amount: 123456.5 });
            }
          }
        },
      });
    };
    const first = await runSync({ ...env.deps, makeApi }, env.settings, { resources: ['deals'], mode: 'incremental', concurrency: 1 });
    expect(first.ok).toBe(true);
    const stale = await env.warehouse.query(`SELECT amount FROM deals WHERE id = '${changedId}'`);
    expect(stale[0]?.amount).not.toBe(123456.5);

    const second = await harness.sync({ resources: ['deals'] });
    expect(second.ok).toBe(true);
    await expectMirrorsTruth(env.warehouse, sim, { resources: ['deals'] });
  });

  /** 1,400 contacts, a first sync of them interrupted after 3 pages (committed in batches of a page). */
  async function interruptedContacts(seed: number): Promise<{ h: Harness; env: ReturnType<Harness['env']> }> {
    const h = await startHarness({ seed, size: { ...SMALL, contacts: 1400 } }, { flushRows: 200 });
    harness = h;
    const { env, result } = await syncInterrupted(h, 3);
    expect(result.outcome).toBe('interrupted');
    return { h, env };
  }

  /** A sync of the contacts stopped once `pages` pages were handed out, and the environment it ran in. */
  async function syncInterrupted(h: Harness, pages: number) {
    const controller = new AbortController();
    const env = h.env({}, controller.signal);
    const makeApi = abortingAfterPages(env.deps.makeApi, controller, pages);
    const report = await runSync({ ...env.deps, makeApi, signal: controller.signal }, env.settings, {
      resources: ['contacts'],
      mode: 'incremental',
      concurrency: 1,
    });
    return { env, result: report.results[0]! };
  }

  it('a type change or a removed property, which moves no updated_at, makes the next sync list every record again and mirror them', async () => {
    harness = await startHarness({ seed: 25, size: SMALL });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const warehouse = harness.env().warehouse;
    const deals = harness.sim.admin.truth().records.deals.length;
    harness.sim.admin.changePropertyType('deals', 'dK3mP9xQ', 'text');
    harness.sim.admin.removeProperty('deals', 'dA7vL2nR');

    harness.sim.admin.resetStats();
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    expect(harness.sim.admin.stats().byRoute['GET /v1/deals/']).toBe(Math.ceil(deals / 200));
    await expectMirrorsTruth(warehouse, harness.sim, { resources: ['deals'] });
    expect((await warehouse.readState('deals')).watermark).not.toBeNull();

    // Once listed again, the definitions are as stored: the sync after is incremental again.
    harness.sim.admin.resetStats();
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    expect(harness.sim.admin.stats().byRoute['GET /v1/deals/']).toBe(1);
    await expectMirrorsTruth(warehouse, harness.sim, { resources: ['deals'] });
  });

  it('a renamed property and new option labels, which move no updated_at, reach the definitions by the next sync', async () => {
    harness = await startHarness({ seed: 27, size: SMALL });
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const stage = harness.sim.admin.truth().properties.deals.find((d) => d.api_name === 'stage')!;
    harness.sim.admin.renameProperty('deals', 'dK3mP9xQ', '見込み粗利（税抜）');
    harness.sim.admin.updatePropertyOptions('deals', 'stage', [...stage.options.slice(1), { value: 'stg_paused', label: '保留' }]);
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim, { resources: ['deals'] });
  });

  it('a property one definitions listing leaves out, while records still carry it, stays mirrored in every record, and its return costs no full walk', async () => {
    harness = await startHarness({ seed: 26, size: SMALL });
    const env = harness.env();
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    const hidden = 'dK3mP9xQ';
    const withoutOne = (): SalesApi => {
      const api = env.deps.makeApi();
      return wrapApi(api, {
        listProperties: async (resource, signal) => {
          const listed = await api.listProperties(resource, signal);
          return { ...listed, definitions: listed.definitions.filter((d) => d.api_name !== hidden) };
        },
      });
    };
    // A deal changed meanwhile is written while the listing leaves the property out.
    harness.sim.admin.updateRecord('deals', harness.sim.admin.truth().records.deals[7]!.id, { [hidden]: 4321.5 });
    const flapped = await runSync({ ...env.deps, makeApi: withoutOne }, env.settings, {
      resources: ['deals'],
      mode: 'incremental',
      concurrency: 1,
    });
    expect(flapped.ok).toBe(true);
    // The records are the service's; the definitions are the listing's, which left one out.
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'], definitions: false });

    harness.sim.admin.resetStats();
    expect((await harness.sync({ resources: ['deals'] })).ok).toBe(true);
    expect(harness.sim.admin.stats().byRoute['GET /v1/deals/']).toBe(1);
    await expectMirrorsTruth(env.warehouse, harness.sim, { resources: ['deals'] });
  });

  it('resumes an interrupted walk from its checkpoint, counting on from the records received before, and still ends equal to the truth', async () => {
    const { h, env } = await interruptedContacts(6);
    const state = await env.warehouse.readState('contacts');
    expect(state.walk?.cursor).toBeTruthy();
    expect(state.walk?.received).toBe(600);
    expect(state.watermark).toBeNull();
    const committed = (await env.warehouse.tableCounts()).contacts;
    expect(committed).toBe(600);

    // Interrupted again, two pages on: the checkpoint counts both runs' records.
    const second = await syncInterrupted(h, 2);
    expect(second.result).toMatchObject({ outcome: 'interrupted', resumed: true });
    expect((await second.env.warehouse.readState('contacts')).walk?.received).toBe(1000);

    h.sim.admin.resetStats();
    const reports: ResourceProgress[] = [];
    const next = h.env();
    const resumed = await runSync({ ...next.deps, progress: { update: (p) => reports.push({ ...p }) } }, next.settings, {
      resources: ['contacts'],
      mode: 'incremental',
      concurrency: 1,
    });
    expect(resumed.results[0]).toMatchObject({ outcome: 'succeeded', resumed: true, records: 400 });
    // The display counts on (1,000 + 400 of 1,400); the run's own figures, in sync_runs, stay this run's.
    expect(reports.at(-1)).toMatchObject({ phase: 'done', resumed: true, recordsBefore: 1000, records: 400 });
    // Pages already committed are not fetched again: 1400 contacts = 7 pages, 5 done before the interruptions.
    expect(h.sim.admin.stats().byRoute['GET /v1/contacts/']).toBe(2);
    await expectMirrorsTruth(next.warehouse, h.sim, { resources: ['contacts'] });
  });

  it.each(['invalid_request', 'not_found'] as const)(
    'a checkpoint whose cursor the service no longer accepts (%s) is walked again from the start of its window, not refused on every run',
    async (answer) => {
      const { h, env } = await interruptedContacts(9);
      expect((await env.warehouse.readState('contacts')).walk?.cursor).toBeTruthy();
      // Cursors expire, or their key changed at a deploy: the spec says nothing of how long one lives.
      h.sim.admin.expireCursors(answer);
      h.sim.admin.mutateRandom(40, 9, ['update', 'create']);
      h.sim.admin.resetStats();
      const resumed = await h.sync({ resources: ['contacts'] });
      expect(resumed.results[0]).toMatchObject({ outcome: 'succeeded', settled: true });
      // The refused page, then the whole window again: 1400 contacts and the new ones, 8 pages.
      expect(h.sim.admin.stats().byStatus[answer === 'not_found' ? '404' : '400']).toBe(1);
      expect(h.sim.admin.stats().byRoute['GET /v1/contacts/']).toBe(9);
      await expectMirrorsTruth(env.warehouse, h.sim, { resources: ['contacts'] });
      expect((await env.warehouse.readState('contacts')).walk).toBeNull();
    },
  );

  it('an incremental walk interrupted over a service that reads updated_after in whole seconds resumes from its checkpoint', async () => {
    const h = await startHarness({ seed: 14, size: { ...SMALL, contacts: 1400 }, updatedAfterDigits: 0 }, { flushRows: 200 });
    harness = h;
    expect((await h.sync({ resources: ['contacts'] })).ok).toBe(true);
    // Four pages of changes, so the incremental walk is stopped with a cursor to resume from.
    for (const contact of h.sim.admin.truth().records.contacts.slice(0, 800))
      h.sim.admin.updateRecord('contacts', contact.id, { first_name: 'Moved' });
    const { env, result } = await syncInterrupted(h, 2);
    expect(result.outcome).toBe('interrupted');
    expect((await env.warehouse.readState('contacts')).walk?.cursor).toBeTruthy();
    h.sim.admin.resetStats();
    // A new client sends the checkpoint's updated_after with every digit, is refused twice, then walks on floored.
    const resumed = await h.sync({ resources: ['contacts'] });
    expect(resumed.results[0]).toMatchObject({ outcome: 'succeeded', resumed: true, settled: true });
    expect(h.sim.admin.stats().byStatus['400']).toBe(2);
    await expectMirrorsTruth(env.warehouse, h.sim, { resources: ['contacts'] });
  });

  it('a checkpoint keeps the key its cursor came on: a pool over a service that takes a cursor only on its own key resumes there', async () => {
    const pool = [DEFAULT_KEYS.read, DEFAULT_KEYS.analyst, DEFAULT_KEYS.write].join(',');
    const h = await startHarness(
      { seed: 12, size: { ...SMALL, contacts: 1400 }, cursorsBoundToKey: true },
      { flushRows: 200, apiKey: pool },
    );
    harness = h;
    const { env, result } = await syncInterrupted(h, 3);
    expect(result.outcome).toBe('interrupted');
    const checkpoint = (await env.warehouse.readState('contacts')).walk;
    expect(checkpoint?.cursorKey).toMatch(/^sk_…[0-9a-f]{8}$/);
    const pagesLeft = Math.ceil((1400 - checkpoint!.received!) / 200);
    // Its key first in the pool: the properties and the users take the first two keys, so the resumed run's first
    // page goes out on the third (the limiter's tie goes to the key least used), and is refused.
    const keys = [DEFAULT_KEYS.read, DEFAULT_KEYS.analyst, DEFAULT_KEYS.write];
    const own = keys.find((key) => keyFingerprint(key) === checkpoint!.cursorKey)!;
    h.sim.admin.resetStats();
    const resumed = await h.sync({ resources: ['contacts'], config: { apiKey: [own, ...keys.filter((k) => k !== own)].join(',') } });
    expect(resumed.results[0]).toMatchObject({ outcome: 'succeeded', resumed: true, settled: true });
    // The pages after the checkpoint, and the one refusal a new process learns from: none walked again.
    expect(h.sim.admin.stats().byRoute['GET /v1/contacts/']).toBe(pagesLeft + 1);
    expect(h.sim.admin.stats().byStatus['400']).toBe(1);
    await expectMirrorsTruth(env.warehouse, h.sim, { resources: ['contacts'] });
  });

  it('a wrong key fails with unauthorized before the warehouse file is even opened', async () => {
    harness = await startHarness({ seed: 7, size: SMALL });
    expect((await harness.sync()).ok).toBe(true);
    const before = await stat(harness.config.warehousePath);
    const wrongKey = `sk_${'Z'.repeat(44)}`;
    await expect(harness.sync({ config: { apiKey: wrongKey } })).rejects.toMatchObject({ code: 'unauthorized' });
    const after = await stat(harness.config.warehousePath);
    expect(after.mtimeMs).toBe(before.mtimeMs);
    await expectMirrorsTruth(harness.env().warehouse, harness.sim);
  });

  it('records every run in sync_runs with its requests and outcome', async () => {
    harness = await startHarness({ seed: 9, size: SMALL });
    await harness.sync({ resources: ['companies', 'users'] });
    const runs = await harness.env().warehouse.recentRuns(10);
    expect(runs.map((r) => [r.resource, r.mode, r.outcome]).sort()).toEqual([
      ['companies', 'incremental', 'succeeded'],
      ['users', 'refresh', 'succeeded'],
    ]);
    expect(runs.every((r) => (r.requests ?? 0) >= 1)).toBe(true);
  });
});
