import { describe, expect, test } from 'vitest';
import type { ListPageEvent } from '../../src/simulator/index.js';
import { call, micros, useSimulators, walkList } from './helpers.js';

const start = useSimulators();

describe('cursorKind offset', () => {
  test('a record updated behind the cursor makes an offset walk step over exactly one unchanged record; keyset skips none', async () => {
    for (const cursorKind of ['offset', 'keyset'] as const) {
      const sim = await start({ cursorKind, listOrder: 'updated_at' });
      const before = sim.admin.truth().records.companies.map((r) => r.id);
      const first = await call(sim, 'GET', '/v1/companies/?page_size=10');
      const behind = first.body.results[0];
      sim.admin.updateRecord('companies', behind.id, { name: `${behind.properties.name} 改` });
      const rest = await walkList(sim, '/v1/companies/', { page_size: '10', after: first.body.paging.next.after });
      const seen = new Set([...first.body.results, ...rest].map((r: any) => r.id));
      const missed = before.filter((id) => !seen.has(id));
      if (cursorKind === 'offset') {
        // The records after the moved one shift one place back: the first of the would-be second page is skipped.
        expect(missed).toEqual([before[10]]);
      } else {
        expect(missed).toEqual([]);
      }
      expect(rest.at(-1).id, cursorKind).toBe(behind.id);
    }
  });

  test('a quiet offset walk returns every record once, in every list order and with updated_after', async () => {
    for (const listOrder of ['updated_at', 'updated_at_desc', 'id'] as const) {
      const sim = await start({ cursorKind: 'offset', listOrder });
      const truth = sim.admin.truth().records.contacts;
      const all = await walkList(sim, '/v1/contacts/', { page_size: '7' });
      expect(all.map((r) => r.id).sort(), listOrder).toEqual(truth.map((r) => r.id).sort());
      expect(new Set(all.map((r) => r.id)).size).toBe(all.length);
      const watermark = [...truth].sort((a, b) => (micros(a.updated_at) < micros(b.updated_at) ? -1 : 1))[40]!.updated_at;
      const since = await walkList(sim, '/v1/contacts/', { page_size: '7', updated_after: watermark });
      const expected = truth.filter((r) => micros(r.updated_at) >= micros(watermark)).map((r) => r.id);
      expect(since.map((r) => r.id).sort(), listOrder).toEqual(expected.sort());
    }
  });

  test('newest first: a record changed during a walk moves to the front, behind a keyset cursor, and an offset walk lists one record twice', async () => {
    for (const cursorKind of ['keyset', 'offset'] as const) {
      const sim = await start({ cursorKind, listOrder: 'updated_at_desc' });
      const first = await call(sim, 'GET', '/v1/companies/?page_size=10');
      const stamps = first.body.results.map((r: any) => micros(r.updated_at));
      expect([...stamps].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0))).toEqual(stamps);
      const ahead = sim.admin.truth().records.companies.at(-1)!;
      sim.admin.updateRecord('companies', ahead.id, { name: `${String(ahead.properties.name)} 改` });
      const rest = await walkList(sim, '/v1/companies/', { page_size: '10', after: first.body.paging.next.after });
      const given = [...first.body.results, ...rest].map((r: any) => r.id);
      expect(given.includes(ahead.id), cursorKind).toBe(false);
      // Offset: every record after the front shifts one place on, so the last of the first page is given again.
      expect(given.length - new Set(given).size, cursorKind).toBe(cursorKind === 'offset' ? 1 : 0);
      expect((await call(sim, 'GET', '/v1/companies/?page_size=1')).body.results[0].id).toBe(ahead.id);
    }
  });

  test('offset cursors are opaque and tamper-evident; a cursor of the other kind is garbled', async () => {
    const offsetSim = await start({ cursorKind: 'offset' });
    const keysetSim = await start({ cursorKind: 'keyset' });
    const after: string = (await call(offsetSim, 'GET', '/v1/deals/?page_size=5')).body.paging.next.after;
    expect(after).not.toMatch(/^\d+$/);
    const tampered = after.slice(0, 10) + (after[10] === 'A' ? 'B' : 'A') + after.slice(11);
    for (const bad of ['5', tampered, after + 'x']) {
      const reply = await call(offsetSim, 'GET', `/v1/deals/?after=${encodeURIComponent(bad)}`);
      expect(reply.status, bad).toBe(400);
      expect(reply.body.error.code).toBe('invalid_request');
    }
    // Same seed, same cursor secret: only the kind differs.
    expect((await call(keysetSim, 'GET', `/v1/deals/?after=${encodeURIComponent(after)}`)).status).toBe(400);
    const keysetAfter: string = (await call(keysetSim, 'GET', '/v1/deals/?page_size=5')).body.paging.next.after;
    expect((await call(offsetSim, 'GET', `/v1/deals/?after=${encodeURIComponent(keysetAfter)}`)).status).toBe(400);
  });

  test('users keep keyset paging under cursorKind offset (usersCursorKind sets theirs)', async () => {
    const sim = await start({ cursorKind: 'offset' });
    const users = await walkList(sim, '/v1/users/', { page_size: '3' });
    expect(users.map((u) => u.id).sort()).toEqual(
      sim.admin
        .truth()
        .users.map((u) => u.id)
        .sort(),
    );
  });
});

describe('usersCursorKind offset and removeUser', () => {
  test('a user removed behind an offset cursor makes the users walk step over exactly one user; keyset skips none', async () => {
    for (const usersCursorKind of ['offset', 'keyset'] as const) {
      const sim = await start({ usersCursorKind });
      const before = sim.admin.truth().users.map((u) => u.id);
      const first = await call(sim, 'GET', '/v1/users/?page_size=4');
      sim.admin.removeUser(first.body.results[0].id);
      const rest = await walkList(sim, '/v1/users/', { page_size: '4', after: first.body.paging.next.after });
      const seen = new Set([...first.body.results, ...rest].map((u: any) => u.id));
      expect(
        before.filter((id) => !seen.has(id)),
        usersCursorKind,
      ).toEqual(usersCursorKind === 'offset' ? [before[4]] : []);
    }
  });

  test('a removed user leaves the truth and its single view answers 404 not_found', async () => {
    const sim = await start();
    const id = sim.admin.truth().users[0]!.id;
    sim.admin.removeUser(id);
    expect(sim.admin.truth().users.map((u) => u.id)).not.toContain(id);
    const reply = await call(sim, 'GET', `/v1/users/${id}/`);
    expect([reply.status, reply.body.error.code]).toEqual([404, 'not_found']);
    expect(() => sim.admin.removeUser(id)).toThrow();
  });
});

describe('maxPageSize', () => {
  test('list pages hold at most maxPageSize records whatever page_size asks, and a walk still gives every record once', async () => {
    const sim = await start({ maxPageSize: 30 });
    for (const path of ['/v1/deals/?page_size=200', '/v1/deals/?page_size=31', '/v1/users/?page_size=200', '/v1/deals/']) {
      const reply = await call(sim, 'GET', path);
      expect(reply.body.results.length, path).toBeLessThanOrEqual(30);
    }
    expect((await call(sim, 'GET', '/v1/deals/?page_size=12')).body.results).toHaveLength(12);
    const all = await walkList(sim, '/v1/deals/', { page_size: '200' });
    expect(all.map((r) => r.id).sort()).toEqual(
      sim.admin
        .truth()
        .records.deals.map((r) => r.id)
        .sort(),
    );
  });

  test('maxPageSize outside 1 to 200 is refused at start', async () => {
    for (const maxPageSize of [0, 201, 1.5]) await expect(start({ maxPageSize })).rejects.toThrow(/maxPageSize/);
  });
});

describe('onListPage', () => {
  test('fires once per record-list page with the page number in its walk and the records served', async () => {
    const events: Array<Omit<ListPageEvent, 'admin'>> = [];
    const sim = await start({ onListPage: ({ resource, pageNumber, served }) => events.push({ resource, pageNumber, served }) });
    const pages: string[][] = [];
    let after: string | undefined;
    do {
      const reply = await call(sim, 'GET', `/v1/deals/?page_size=25${after ? `&after=${encodeURIComponent(after)}` : ''}`);
      pages.push(reply.body.results.map((r: any) => r.id));
      after = reply.body.paging.next?.after;
    } while (after);
    await call(sim, 'GET', '/v1/users/');
    await call(sim, 'POST', '/v1/deals/search/', { body: {} });
    expect(events.map((e) => [e.resource, e.pageNumber])).toEqual([
      ['deals', 1],
      ['deals', 2],
      ['deals', 3],
    ]);
    expect(events.map((e) => e.served.map((r) => r.id))).toEqual(pages);
    // A new walk starts again at page 1.
    await call(sim, 'GET', '/v1/deals/?page_size=25');
    expect(events.at(-1)?.pageNumber).toBe(1);
  });

  test('an update made from the hook is not in the page being sent, but is in the next pages and in truth', async () => {
    const sim = await start();
    let target: { id: string; name: unknown } | null = null;
    sim.admin.setOnListPage(({ pageNumber, served, admin }) => {
      if (pageNumber !== 1) return;
      target = { id: served[0]!.id, name: served[0]!.properties['name'] };
      admin.updateRecord('companies', served[0]!.id, { name: 'changed from the hook' });
    });
    const first = await call(sim, 'GET', '/v1/companies/?page_size=10');
    expect(target).not.toBeNull();
    const { id, name } = target as unknown as { id: string; name: unknown };
    expect(first.body.results[0]).toMatchObject({ id, properties: { name } });
    const rest = await walkList(sim, '/v1/companies/', { page_size: '10', after: first.body.paging.next.after });
    expect(rest.at(-1)).toMatchObject({ id, properties: { name: 'changed from the hook' } });
    expect(sim.admin.truth().records.companies.find((r) => r.id === id)?.properties['name']).toBe('changed from the hook');
  });

  test('setOnListPage(null) removes the hook; a throwing hook turns the page into a 500', async () => {
    let fired = 0;
    const sim = await start({ onListPage: () => (fired += 1) });
    await call(sim, 'GET', '/v1/deals/');
    sim.admin.setOnListPage(null);
    await call(sim, 'GET', '/v1/deals/');
    expect(fired).toBe(1);
    sim.admin.setOnListPage(() => {
      throw new Error('hook failed on purpose');
    });
    const reply = await call(sim, 'GET', '/v1/deals/');
    expect(reply.status).toBe(500);
    expect(reply.body.error.code).toBe('internal_error');
  });
});

describe('repeatPage fault', () => {
  test('a list request with a cursor gets a page whose next cursor is its own; requests without a cursor leave it armed', async () => {
    const sim = await start();
    sim.admin.failNext(1, 'repeatPage', '/v1/deals/');
    const first = await call(sim, 'GET', '/v1/deals/?page_size=10');
    const c1: string = first.body.paging.next.after;
    expect((await call(sim, 'GET', '/v1/companies/?page_size=10')).body.paging.next.after).toBeTruthy();
    expect(sim.admin.stats().faults).toEqual({});

    const second = await call(sim, 'GET', `/v1/deals/?page_size=10&after=${encodeURIComponent(c1)}`);
    expect(second.status).toBe(200);
    expect(second.body.results).toHaveLength(10);
    expect(second.body.results[0].id).not.toBe(first.body.results[0].id);
    expect(second.body.paging.next.after).toBe(c1);
    expect(new URL(second.body.paging.next.link).searchParams.get('after')).toBe(c1);
    expect(sim.admin.stats().faults).toEqual({ repeatPage: 1 });

    // Following it gives the same page again, now with a real next cursor (the fault is used up).
    const again = await call(sim, 'GET', `/v1/deals/?page_size=10&after=${encodeURIComponent(c1)}`);
    expect(again.body.results).toEqual(second.body.results);
    expect(again.body.paging.next.after).not.toBe(c1);
  });

  test('a walk following the links sees the repeated page once per scripted count, and still ends', async () => {
    const sim = await start();
    sim.admin.failNext(2, 'repeatPage');
    const seen = await walkList(sim, '/v1/deals/', { page_size: '20' });
    expect(seen).toHaveLength(60 + 40);
    expect(new Set(seen.map((r) => r.id)).size).toBe(60);
    expect(sim.admin.stats().faults).toEqual({ repeatPage: 2 });
  });
});

describe('jsonLayout unkind', () => {
  test('lists name paging before results in indented JSON, with the same members as compact ones', async () => {
    const compact = await start({ seed: 5 });
    const unkind = await start({ seed: 5, jsonLayout: 'unkind' });
    for (const path of ['/v1/deals/?page_size=3', '/v1/users/?page_size=2']) {
      const [a, b] = [await call(compact, 'GET', path), await call(unkind, 'GET', path)];
      expect(a.text.startsWith('{"results":['), path).toBe(true);
      expect(b.text.startsWith('{\n  "paging": {\n    "next": {'), path).toBe(true);
      expect(b.text.indexOf('"paging"')).toBeLessThan(b.text.indexOf('"results"'));
      expect(b.body.results).toEqual(a.body.results);
      expect(b.body.paging.next.after).toEqual(expect.any(String));
    }
    const search = await call(unkind, 'POST', '/v1/deals/search/', { body: { page_size: 2 } });
    expect(search.text.indexOf('"paging"')).toBeLessThan(search.text.indexOf('"results"'));
  });
});

describe('definitionsListing', () => {
  test('pages of pageSize definitions, followed to the last, give every definition once; deals keep the shape the spec shows', async () => {
    const sim = await start({ definitionsListing: { pageSize: 3, shape: 'data' } });
    for (const resource of ['deals', 'companies'] as const) {
      const names: string[] = [];
      let after: string | undefined;
      do {
        const reply = await call(sim, 'GET', `/v1/${resource}/properties/${after ? `?after=${after}` : ''}`);
        const page = resource === 'deals' ? reply.body.results : reply.body.data;
        expect(page.length, resource).toBeLessThanOrEqual(3);
        expect('results' in reply.body, resource).toBe(resource === 'deals');
        names.push(...page.map((d: any) => d.api_name));
        after = reply.body.paging.next?.after;
      } while (after);
      expect(names, resource).toEqual(sim.admin.truth().properties[resource].map((d) => d.api_name));
    }
  });

  test("a definitions cursor follows the lists' cursor rules: refused once expired; a bare list is never paged", async () => {
    const sim = await start({ definitionsListing: { pageSize: 2 } });
    const first = await call(sim, 'GET', '/v1/contacts/properties/');
    sim.admin.expireCursors();
    expect((await call(sim, 'GET', `/v1/contacts/properties/?after=${first.body.paging.next.after}`)).status).toBe(400);
    const bare = await start({ definitionsListing: { shape: 'array' } });
    const listed = await call(bare, 'GET', '/v1/meeting-logs/properties/');
    expect(listed.body).toEqual(bare.admin.truth().properties['meeting-logs']);
    await expect(start({ definitionsListing: { pageSize: 2, shape: 'array' } })).rejects.toThrow(/cannot be paged/);
  });
});
