import { describe, expect, test, vi } from 'vitest';
import { RecordStore } from '../../src/simulator/record-store.js';
import { call, micros, SMALL, useSimulators, walkList } from './helpers.js';

const start = useSimulators();
const RESOURCES = ['deals', 'companies', 'contacts', 'meeting-logs', 'contact-activities'] as const;

describe('cursor paging', () => {
  test('a quiet walk returns every record exactly once, for every resource and page size', async () => {
    const sim = await start();
    const truth = sim.admin.truth();
    for (const resource of RESOURCES) {
      for (const pageSize of ['1', '7', '200']) {
        const seen = await walkList(sim, `/v1/${resource}/`, { page_size: pageSize });
        const ids = seen.map((r) => r.id);
        expect(new Set(ids).size, `${resource} ${pageSize}`).toBe(ids.length);
        expect(ids.sort()).toEqual(truth.records[resource].map((r) => r.id).sort());
      }
    }
  });

  test('with overlappingPages each next page begins with the last record of the one before, under either cursor', async () => {
    for (const cursorKind of ['keyset', 'offset'] as const) {
      const sim = await start({ overlappingPages: true, cursorKind });
      const truth = sim.admin.truth().records.contacts.map((r) => r.id);
      const pages: string[][] = [];
      let after: string | null = null;
      do {
        const page = await call(sim, 'GET', `/v1/contacts/?page_size=7${after ? `&after=${encodeURIComponent(after)}` : ''}`);
        pages.push(page.body.results.map((r: { id: string }) => r.id));
        after = page.body.paging.next?.after ?? null;
      } while (after !== null);
      for (let i = 1; i < pages.length; i++) expect(pages[i]![0], cursorKind).toBe(pages[i - 1]!.at(-1));
      expect(new Set(pages.flat()).size).toBe(truth.length);
    }
  });

  test("with overlappingPages 'ties' each next page begins with every record of the one before sharing its last updated_at", async () => {
    for (const cursorKind of ['keyset', 'offset'] as const) {
      const sim = await start({ overlappingPages: 'ties', cursorKind });
      const ordered = await walkList(sim, '/v1/contacts/', { page_size: '200' });
      // Records 4–6 of the list (0-based) share one updated_at: the first page of 7 ends with three of a kind.
      for (const r of ordered.slice(4, 6)) sim.admin.setUpdatedAt('contacts', r.id, ordered[6]!.updated_at);
      const pages: { id: string; updated_at: string }[][] = [];
      let after: string | null = null;
      do {
        const page = await call(sim, 'GET', `/v1/contacts/?page_size=7${after ? `&after=${encodeURIComponent(after)}` : ''}`);
        pages.push(page.body.results);
        after = page.body.paging.next?.after ?? null;
      } while (after !== null);
      expect(
        pages[1]!.slice(0, 3).map((r) => r.id),
        cursorKind,
      ).toEqual(pages[0]!.slice(4).map((r) => r.id));
      for (let i = 2; i < pages.length; i++) expect(pages[i]![0]!.id, cursorKind).toBe(pages[i - 1]!.at(-1)!.id);
      expect(new Set(pages.flat().map((r) => r.id)).size).toBe(ordered.length);
    }
  });

  test('listTwice shows a record twice in a row in its page, the same version, until told otherwise', async () => {
    const sim = await start();
    const id = sim.admin.truth().records.deals[3]!.id;
    sim.admin.listTwice('deals', id);
    const listed = await walkList(sim, '/v1/deals/', { page_size: '200' });
    const at = listed.findIndex((r) => r.id === id);
    expect(listed[at + 1]).toEqual(listed[at]);
    expect(listed.length).toBe(sim.admin.truth().records.deals.length + 1);
    sim.admin.listTwice('deals', id, false);
    expect((await walkList(sim, '/v1/deals/', { page_size: '200' })).length).toBe(sim.admin.truth().records.deals.length);
  });

  test('the list order is (updated_at, id) ascending and pages hold page_size records', async () => {
    const sim = await start();
    const first = await call(sim, 'GET', '/v1/contacts/?page_size=25');
    expect(first.body.results).toHaveLength(25);
    const all = await walkList(sim, '/v1/contacts/', { page_size: '25' });
    for (let i = 1; i < all.length; i++) {
      const a = micros(all[i - 1].updated_at);
      const b = micros(all[i].updated_at);
      expect(a < b || (a === b && all[i - 1].id < all[i].id)).toBe(true);
    }
  });

  test('a seeded service has each list in order before its first page: that page compares records only to find its place', async () => {
    const sim = await start({ size: { ...SMALL, deals: 2000 } });
    const compare = vi.spyOn(RecordStore.prototype, 'compare');
    try {
      const first = await call(sim, 'GET', '/v1/deals/?page_size=200');
      expect(first.body.results).toHaveLength(200);
      // Sorting 2,000 records inside the page's latency takes about 20,000 comparisons; finding a place, a dozen.
      expect(compare.mock.calls.length).toBeLessThan(200);
    } finally {
      compare.mockRestore();
    }
  });

  test('the default page size is 100', async () => {
    const sim = await start({ size: { contacts: 150 } });
    const reply = await call(sim, 'GET', '/v1/contacts/');
    expect(reply.body.results).toHaveLength(100);
    expect(reply.body.paging.next).not.toBeNull();
  });

  test('page_size outside 1..200 or not an integer is 400 validation_error on page_size', async () => {
    const sim = await start();
    for (const value of ['0', '201', 'abc', '1.5', '-1']) {
      const reply = await call(sim, 'GET', `/v1/deals/?page_size=${value}`);
      expect(reply.status, value).toBe(400);
      expect(reply.body.error.code).toBe('validation_error');
      expect(reply.body.error.fields[0].name).toBe('page_size');
    }
    expect((await call(sim, 'GET', '/v1/users/?page_size=201')).status).toBe(400);
  });

  test('a garbled cursor is 400 invalid_request', async () => {
    const sim = await start();
    const first = await call(sim, 'GET', '/v1/deals/?page_size=5');
    const after: string = first.body.paging.next.after;
    const tampered = after.slice(0, 10) + (after[10] === 'A' ? 'B' : 'A') + after.slice(11);
    for (const bad of ['garbage', tampered, after + 'x', '']) {
      const reply = await call(sim, 'GET', `/v1/deals/?after=${encodeURIComponent(bad)}`);
      expect(reply.status, bad).toBe(400);
      expect(reply.body.error.code).toBe('invalid_request');
    }
  });

  test('after expireCursors every cursor given before is 400 invalid_request, and one given after works', async () => {
    const sim = await start();
    const before = (await call(sim, 'GET', '/v1/deals/?page_size=5')).body.paging.next.after as string;
    const users = (await call(sim, 'GET', '/v1/users/?page_size=1')).body.paging.next.after as string;
    expect((await call(sim, 'GET', `/v1/deals/?page_size=5&after=${encodeURIComponent(before)}`)).status).toBe(200);
    sim.admin.expireCursors();
    for (const path of [`/v1/deals/?page_size=5&after=${encodeURIComponent(before)}`, `/v1/users/?after=${encodeURIComponent(users)}`]) {
      const reply = await call(sim, 'GET', path);
      expect(reply.status, path).toBe(400);
      expect(reply.body.error.code).toBe('invalid_request');
    }
    const after = (await call(sim, 'GET', '/v1/deals/?page_size=5')).body.paging.next.after as string;
    expect((await call(sim, 'GET', `/v1/deals/?page_size=5&after=${encodeURIComponent(after)}`)).status).toBe(200);
  });

  test('paging.next.link is the full URL of the next page with the other query parameters', async () => {
    const sim = await start();
    const first = await call(sim, 'GET', '/v1/deals/?page_size=5&updated_after=2020-01-01T00:00:00Z');
    const link = new URL(first.body.paging.next.link);
    expect(`${link.origin}${link.pathname}`).toBe(`${sim.url}/v1/deals/`);
    expect(link.searchParams.get('page_size')).toBe('5');
    expect(link.searchParams.get('updated_after')).toBe('2020-01-01T00:00:00Z');
    expect(link.searchParams.get('after')).toBe(first.body.paging.next.after);
    const res = await fetch(link, { headers: { Authorization: `Bearer ${(await import('./helpers.js')).DEFAULT_KEYS.read}` } });
    const second = (await res.json()) as any;
    expect(second.results[0].id).not.toBe(first.body.results[0].id);
  });

  test('the last page has paging.next null', async () => {
    const sim = await start();
    const reply = await call(sim, 'GET', '/v1/deals/?page_size=200');
    expect(reply.body.results).toHaveLength(60);
    expect(reply.body.paging).toEqual({ next: null });
  });

  test('users page with a cursor too', async () => {
    const sim = await start();
    const users = await walkList(sim, '/v1/users/', { page_size: '3' });
    expect(users.map((u) => u.id).sort()).toEqual(
      sim.admin
        .truth()
        .users.map((u) => u.id)
        .sort(),
    );
  });

  test('a record updated mid-walk behind the cursor is returned again later in updated_at order', async () => {
    const sim = await start();
    const first = await call(sim, 'GET', '/v1/companies/?page_size=10');
    const behind = first.body.results[0];
    sim.admin.updateRecord('companies', behind.id, { name: `${behind.properties.name} 改` });
    const rest = await walkList(sim, '/v1/companies/', { page_size: '10', after: first.body.paging.next.after });
    expect(rest.at(-1).id).toBe(behind.id);
  });

  test('listOrder id walks by id, so a mid-walk update behind the cursor is not seen again', async () => {
    const sim = await start({ listOrder: 'id' });
    const first = await call(sim, 'GET', '/v1/companies/?page_size=10');
    const ids = first.body.results.map((r: any) => r.id);
    expect([...ids].sort()).toEqual(ids);
    sim.admin.updateRecord('companies', ids[0], { name: 'changed' });
    const rest = await walkList(sim, '/v1/companies/', { page_size: '10', after: first.body.paging.next.after });
    expect(rest.some((r) => r.id === ids[0])).toBe(false);
  });
});

describe('updated_after', () => {
  test('is inclusive at microsecond precision, in UTC and with offsets', async () => {
    const sim = await start();
    const target = sim.admin.truth().records.deals[30]!;
    const at = micros(target.updated_at);
    const iso = (us: bigint, offset: 'Z' | '+09:00'): string => {
      const ms = Number(us / 1000n);
      const shifted = new Date(ms + (offset === 'Z' ? 0 : 9 * 3600_000)).toISOString().slice(0, 23);
      return `${shifted}${String(us % 1000n).padStart(3, '0')}${offset}`;
    };
    for (const offset of ['Z', '+09:00'] as const) {
      const exact = await walkList(sim, '/v1/deals/', { updated_after: iso(at, offset) });
      expect(
        exact.some((r) => r.id === target.id),
        `exact ${offset}`,
      ).toBe(true);
      expect(exact.every((r) => micros(r.updated_at) >= at)).toBe(true);
      const oneMicroLater = await walkList(sim, '/v1/deals/', { updated_after: iso(at + 1n, offset) });
      expect(
        oneMicroLater.some((r) => r.id === target.id),
        `+1µs ${offset}`,
      ).toBe(false);
    }
  });

  test('accepts fractions of any length and compares below the microsecond correctly', async () => {
    const sim = await start();
    const target = sim.admin.truth().records.deals[10]!;
    const utc = new Date(Number(micros(target.updated_at) / 1000n)).toISOString().slice(0, 19);
    const frac = String(micros(target.updated_at) % 1_000_000n).padStart(6, '0');
    const nano = await walkList(sim, '/v1/deals/', { updated_after: `${utc}.${frac}000Z` });
    expect(nano.some((r) => r.id === target.id)).toBe(true);
    const nanoLater = await walkList(sim, '/v1/deals/', { updated_after: `${utc}.${frac}001Z` });
    expect(nanoLater.some((r) => r.id === target.id)).toBe(false);
    const seconds = await walkList(sim, '/v1/deals/', { updated_after: `${utc}Z` });
    expect(seconds.some((r) => r.id === target.id)).toBe(true);
  });

  test('an unparseable timestamp is 400 validation_error on updated_after', async () => {
    const sim = await start();
    for (const bad of ['yesterday', '2025-13-01T00:00:00Z', '2025-01-01T00:00:00']) {
      const reply = await call(sim, 'GET', `/v1/deals/?updated_after=${encodeURIComponent(bad)}`);
      expect(reply.status, bad).toBe(400);
      expect(reply.body.error.fields[0].name).toBe('updated_after');
    }
  });

  test('with a cursor, the walk still returns only records at or after the watermark', async () => {
    const sim = await start();
    const sorted = sim.admin.truth().records.contacts;
    const watermark = sorted[40]!.updated_at;
    const seen = await walkList(sim, '/v1/contacts/', { updated_after: watermark, page_size: '7' });
    const expected = sorted.filter((r) => micros(r.updated_at) >= micros(watermark)).map((r) => r.id);
    expect(seen.map((r) => r.id)).toEqual(expected);
  });
});

describe('timestamps', () => {
  test('are ISO strings with six fractional digits, some with Z and some with +09:00', async () => {
    const sim = await start();
    const deals = await walkList(sim, '/v1/deals/');
    const stamps = deals.flatMap((d) => [d.created_at, d.updated_at]);
    for (const s of stamps) expect(s).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|\+09:00)$/);
    expect(stamps.some((s) => s.endsWith('Z'))).toBe(true);
    expect(stamps.some((s) => s.endsWith('+09:00'))).toBe(true);
  });
});

describe('summaries', () => {
  test('appear only on the single meeting-log view, never in list or search elements', async () => {
    const sim = await start();
    const list = await walkList(sim, '/v1/meeting-logs/');
    expect(list.every((r) => !('summaries' in r))).toBe(true);
    const search = await call(sim, 'POST', '/v1/meeting-logs/search/', { body: {} });
    expect(search.body.results.every((r: any) => !('summaries' in r))).toBe(true);
    const truth = sim.admin.truth();
    const withSummaries = Object.keys(truth.summaries)[0]!;
    const one = await call(sim, 'GET', `/v1/meeting-logs/${withSummaries}/`);
    expect(one.body.summaries).toEqual(truth.summaries[withSummaries]);
    const without = truth.records['meeting-logs'].find((r) => !truth.summaries[r.id])!;
    expect((await call(sim, 'GET', `/v1/meeting-logs/${without.id}/`)).body.summaries).toEqual([]);
    const deal = truth.records.deals[0]!;
    expect('summaries' in (await call(sim, 'GET', `/v1/deals/${deal.id}/`)).body).toBe(false);
  });

  test('create and PATCH responses of meeting logs include summaries', async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals[0]!;
    const { DEFAULT_KEYS } = await import('./helpers.js');
    const created = await call(sim, 'POST', '/v1/meeting-logs/', {
      key: DEFAULT_KEYS.write,
      body: { properties: { deal_id: deal.id, meeting_name: '初回' } },
    });
    expect(created.status).toBe(201);
    expect(created.body.summaries).toEqual([]);
    const patched = await call(sim, 'PATCH', `/v1/meeting-logs/${created.body.id}/`, {
      key: DEFAULT_KEYS.write,
      body: { properties: { content: '議事録' } },
    });
    expect(patched.body.summaries).toEqual([]);
  });

  test('seeded summaries include text and select kinds and several statuses', async () => {
    const sim = await start({ size: { meetingLogs: 300 } });
    const all = Object.values(sim.admin.truth().summaries).flat();
    const text = all.find((s) => s.result_type === 'text' && s.status === 'completed')!;
    expect(text.text).toEqual(expect.any(String));
    expect(text.selections).toEqual([]);
    const select = all.find((s) => s.result_type === 'select' && s.status === 'completed')!;
    expect(select.text).toBeNull();
    expect(select.selections[0]).toEqual({ value: expect.any(String), level: expect.any(Number), order: 1 });
    expect(new Set(all.map((s) => s.status))).toEqual(new Set(['pending', 'completed', 'failed']));
  });
});
