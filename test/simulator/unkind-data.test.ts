import { describe, expect, test } from 'vitest';
import type { RecordCorruption } from '../../src/simulator/index.js';
import { createSimulator } from '../../src/simulator/index.js';
import { call, DEFAULT_KEYS, SMALL, useSimulators, walkList } from './helpers.js';

const start = useSimulators();

describe('summaryStatuses', () => {
  test('seeded and generated summaries use the configured names: none → pending → final[0] → final[0]', async () => {
    const sim = await start({ size: { meetingLogs: 300 }, summaryStatuses: { pending: 'queued', final: ['done'] } });
    const seeded = new Set(
      Object.values(sim.admin.truth().summaries)
        .flat()
        .map((s) => s.status),
    );
    expect(seeded).toEqual(new Set(['queued', 'done']));
    const deal = sim.admin.truth().records.deals[0]!;
    const { activity } = sim.admin.recordActivity('meeting-logs', deal.id);
    const statuses = () => sim.admin.truth().summaries[activity.id]?.map((s) => s.status);
    expect(statuses()).toBeUndefined();
    expect(sim.admin.generateSummaries(activity.id).map((s) => s.status)).toEqual(['queued', 'queued']);
    expect(sim.admin.generateSummaries(activity.id).map((s) => s.status)).toEqual(['done', 'done']);
    expect(sim.admin.generateSummaries(activity.id).map((s) => s.status)).toEqual(['done', 'done']);
    expect((await call(sim, 'GET', `/v1/meeting-logs/${activity.id}/`)).body.summaries.map((s: any) => s.status)).toEqual(['done', 'done']);
    expect(sim.admin.setSummaries(activity.id, [{ summary_type: 'overview', result_type: 'text', text: 'x' }])[0]!.status).toBe('done');
  });

  test('setSummaryStatuses renames what is generated from then on; the default vocabulary is unchanged', async () => {
    const sim = await start();
    const [a, b] = sim.admin.truth().records['meeting-logs'].filter((l) => !sim.admin.truth().summaries[l.id]);
    expect(sim.admin.generateSummaries(a!.id).map((s) => s.status)).toEqual(['pending', 'pending']);
    expect(sim.admin.generateSummaries(a!.id).map((s) => s.status)).toEqual(['completed', 'completed']);
    sim.admin.setSummaryStatuses({ pending: 'waiting', final: ['ok', 'ng'] });
    expect(sim.admin.generateSummaries(b!.id).map((s) => s.status)).toEqual(['waiting', 'waiting']);
    expect(sim.admin.generateSummaries(b!.id).map((s) => s.status)).toEqual(['ok', 'ok']);
    expect(sim.admin.truth().summaries[a!.id]!.map((s) => s.status)).toEqual(['completed', 'completed']);
    expect(() => sim.admin.setSummaryStatuses({ pending: 'x', final: [] })).toThrow();
    expect(() => sim.admin.setSummaryStatuses({ pending: 'x', final: ['x'] })).toThrow();
  });

  test('a second final name is the status of seeded failed summaries; the same seed gives the same data', () => {
    const statuses = { pending: 'queued', final: ['done', 'error'] };
    const a = createSimulator({ seed: 4, size: { ...SMALL, meetingLogs: 300 }, summaryStatuses: statuses }).admin.truth();
    const plain = createSimulator({ seed: 4, size: { ...SMALL, meetingLogs: 300 } }).admin.truth();
    const rename: Record<string, string> = { pending: 'queued', completed: 'done', failed: 'error' };
    expect(a.summaries).toEqual(
      Object.fromEntries(Object.entries(plain.summaries).map(([id, list]) => [id, list.map((s) => ({ ...s, status: rename[s.status] }))])),
    );
    expect(a.records).toEqual(plain.records);
  });
});

describe('corruptRecord', () => {
  const cases: Array<[RecordCorruption, (broken: any, clean: any) => void]> = [
    [
      'object_property',
      (broken, clean) => {
        const first = Object.keys(clean.properties)[0]!;
        expect(broken.properties[first]).toEqual({ nested: 1 });
        expect({ ...broken.properties, [first]: clean.properties[first] }).toEqual(clean.properties);
      },
    ],
    [
      'short_id',
      (broken, clean) => {
        expect(broken.id).toBe(clean.id.slice(0, 17));
        expect(broken.id).toHaveLength(17);
      },
    ],
    [
      'leap_second',
      (broken, clean) => {
        expect(broken.updated_at).toBe(`${clean.updated_at.slice(0, 17)}60${clean.updated_at.slice(19)}`);
        expect(broken.updated_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:60\.\d{6}(Z|\+09:00)$/);
      },
    ],
    [
      'space_separator',
      (broken, clean) => {
        expect(broken.updated_at).toBe(clean.updated_at.replace('T', ' '));
      },
    ],
    [
      'null_property_map',
      (broken) => {
        expect(broken.properties).toBeNull();
      },
    ],
  ];

  for (const [corruption, check] of cases) {
    test(`${corruption}: broken in list, search and single GET until repaired; truth stays clean and names the id`, async () => {
      const sim = await start();
      const clean = sim.admin.truth().records.deals[7]!;
      sim.admin.corruptRecord('deals', clean.id, corruption);
      const short = clean.id.slice(0, 17);
      const pick = (list: any[]) => list.filter((r) => r.id === clean.id || r.id === short);

      const listed = pick(await walkList(sim, '/v1/deals/', { page_size: '200' }));
      const searched = pick((await call(sim, 'POST', '/v1/deals/search/', { body: { page_size: 200 } })).body.results);
      const single = (await call(sim, 'GET', `/v1/deals/${clean.id}/`)).body;
      for (const broken of [listed[0], searched[0], single]) {
        expect(broken).toBeDefined();
        check(broken, clean);
        expect(broken).not.toEqual(clean);
      }
      expect(listed).toHaveLength(1);
      // Only that record: the others are as they were.
      const others = (await walkList(sim, '/v1/deals/', { page_size: '200' })).filter((r) => r.id !== clean.id && r.id !== short);
      expect(others).toEqual(sim.admin.truth().records.deals.filter((r) => r.id !== clean.id));

      const truth = sim.admin.truth();
      expect(truth.records.deals.find((r) => r.id === clean.id)).toEqual(clean);
      expect(truth.corrupted?.records.deals).toEqual([clean.id]);
      expect(sim.admin.corrupted()).toEqual(truth.corrupted);

      sim.admin.repairRecord('deals', clean.id);
      expect((await call(sim, 'GET', `/v1/deals/${clean.id}/`)).body).toEqual(clean);
      expect(sim.admin.truth().corrupted).toBeUndefined();
    });
  }

  test('a corrupted meeting log keeps its summaries on the single view; unknown ids and kinds are refused', async () => {
    const sim = await start();
    const logId = Object.keys(sim.admin.truth().summaries)[0]!;
    sim.admin.corruptRecord('meeting-logs', logId, 'null_property_map');
    const single = (await call(sim, 'GET', `/v1/meeting-logs/${logId}/`)).body;
    expect(single.properties).toBeNull();
    expect(single.summaries).toEqual(sim.admin.truth().summaries[logId]);
    expect(() => sim.admin.corruptRecord('deals', 'AAAAAAAAAAAAAAAAAA', 'short_id')).toThrow();
    expect(() => sim.admin.corruptRecord('deals', sim.admin.truth().records.deals[0]!.id, 'bogus' as RecordCorruption)).toThrow();
  });

  test('a deleted corrupted record leaves the corrupted list', async () => {
    const sim = await start();
    const id = sim.admin.truth().records.companies[0]!.id;
    sim.admin.corruptRecord('companies', id, 'short_id');
    sim.admin.deleteRecord('companies', id);
    expect(sim.admin.corrupted().records.companies).toEqual([]);
    expect(sim.admin.truth().corrupted).toBeUndefined();
  });
});

describe('corruptUser', () => {
  test('null_name and short_id show in the users list and single GET until repaired', async () => {
    const sim = await start();
    const [u1, u2] = sim.admin.truth().users;
    sim.admin.corruptUser(u1!.id, 'null_name');
    sim.admin.corruptUser(u2!.id, 'short_id');
    const listed = await walkList(sim, '/v1/users/');
    expect(listed.find((u) => u.id === u1!.id)).toEqual({ ...u1, name: null });
    expect(listed.find((u) => u.id === u2!.id.slice(0, 17))).toEqual({ ...u2, id: u2!.id.slice(0, 17) });
    expect((await call(sim, 'GET', `/v1/users/${u1!.id}/`)).body).toEqual({ ...u1, name: null });
    expect(sim.admin.truth().users.slice(0, 2)).toEqual([u1, u2]);
    expect(sim.admin.truth().corrupted?.users).toEqual([u1!.id, u2!.id].sort());
    sim.admin.repairUser(u1!.id);
    sim.admin.repairUser(u2!.id);
    expect((await walkList(sim, '/v1/users/')).slice(0, 2)).toEqual([u1, u2]);
    expect(sim.admin.truth().corrupted).toBeUndefined();
    expect(() => sim.admin.corruptUser('AAAAAAAAAAAAAAAAAA', 'null_name')).toThrow();
  });
});

describe('single GET of a missing record', () => {
  test('a deleted or unknown record answers 404 with code not_found', async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals[0]!;
    sim.admin.deleteRecord('deals', deal.id);
    for (const path of [`/v1/deals/${deal.id}/`, '/v1/companies/AAAAAAAAAAAAAAAAAA/', '/v1/users/AAAAAAAAAAAAAAAAAA/']) {
      const reply = await call(sim, 'GET', path);
      expect(reply.status, path).toBe(404);
      expect(reply.body.error.code, path).toBe('not_found');
      expect(typeof reply.body.error.message).toBe('string');
    }
  });
});

describe('restoreRecord', () => {
  test('a deleted record comes back with its values, summaries and updated_at as they were; one never deleted is 404', async () => {
    const sim = await start({ size: { meetingLogs: 300 } });
    const log = sim.admin
      .truth()
      .records['meeting-logs'].find((l) => (sim.admin.getRecord('meeting-logs', l.id) as any).summaries.length > 0)!;
    const before = sim.admin.getRecord('meeting-logs', log.id);
    sim.admin.deleteRecord('meeting-logs', log.id);
    expect((await call(sim, 'GET', `/v1/meeting-logs/${log.id}/`)).status).toBe(404);
    const res = await fetch(`${sim.url}/_admin/records/meeting-logs/${log.id}/restore`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(before);
    expect((await call(sim, 'GET', `/v1/meeting-logs/${log.id}/`)).body).toEqual(before);
    expect(sim.admin.truth().records['meeting-logs'].find((l) => l.id === log.id)).toEqual(log);
    expect(() => sim.admin.restoreRecord('meeting-logs', log.id)).toThrow();
    expect(() => sim.admin.restoreRecord('deals', 'AAAAAAAAAAAAAAAAAA')).toThrow();
  });
});

describe('admin HTTP for the unkind knobs', () => {
  test('commit lag, clock, summary statuses, corruptions and updated_at over /_admin', async () => {
    let t = Date.UTC(2025, 5, 1);
    const sim = await start({ now: () => t });
    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${sim.url}/_admin/${path}`, {
        method,
        headers: { 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const deal = sim.admin.truth().records.deals[0]!;

    expect((await admin('PUT', 'commit-lag', { ms: 1_000 })).status).toBe(200);
    sim.admin.updateRecord('deals', deal.id, { name: 'lagging' });
    expect((await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body.properties.name).toBe(deal.properties['name']);
    t += 1_001;
    expect((await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body.properties.name).toBe('lagging');
    expect((await admin('PUT', 'commit-lag', { ms: -5 })).status).toBe(400);

    await admin('PUT', 'clock', { dateSkewMs: 60_000 });
    expect((await call(sim, 'GET', '/v1/deals/')).headers.get('date')).toBe(new Date(t + 60_000).toUTCString());
    await admin('PUT', 'clock', { omitDate: true });
    expect((await call(sim, 'GET', '/v1/deals/')).headers.get('date')).toBeNull();

    await admin('PUT', 'summary-statuses', { pending: 'queued', final: ['done'] });
    const log = sim.admin.recordActivity('meeting-logs', deal.id).activity;
    expect(sim.admin.generateSummaries(log.id).map((s) => s.status)).toEqual(['queued', 'queued']);

    expect((await admin('PUT', `corruptions/records/deals/${deal.id}`, { corruption: 'short_id' })).status).toBe(200);
    const user = sim.admin.truth().users[0]!;
    await admin('PUT', `corruptions/users/${user.id}`, { corruption: 'null_name' });
    expect((await admin('GET', 'corruptions')).body).toEqual({
      records: { deals: [deal.id], companies: [], contacts: [], 'meeting-logs': [], 'contact-activities': [] },
      users: [user.id],
    });
    expect((await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body.id).toHaveLength(17);
    await admin('DELETE', `corruptions/records/deals/${deal.id}`);
    await admin('DELETE', `corruptions/users/${user.id}`);
    expect(sim.admin.corrupted().records.deals).toEqual([]);
    expect((await admin('PUT', `corruptions/records/deals/${deal.id}`, { corruption: 'nope' })).status).toBe(400);

    const moved = await admin('PUT', `records/deals/${deal.id}/updated-at`, { updated_at: '2021-03-04T05:06:07.000008+09:00' });
    expect(moved.status).toBe(200);
    expect(sim.admin.truth().records.deals[0]!.id).toBe(deal.id);
    expect((await admin('PUT', `records/deals/${deal.id}/updated-at`, { updated_at: '2021-03-04T05:06:07' })).status).toBe(400);
    expect((await call(sim, 'GET', '/v1/deals/', { key: DEFAULT_KEYS.read })).status).toBe(200);
  });
});
