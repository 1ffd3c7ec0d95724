import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ListPage, SalesApi } from '../../src/api/types.js';
import { SalesyncError } from '../../src/core/errors.js';
import type { ServiceRecord } from '../../src/core/types.js';
import { walkPages, type BufferedPages, type PageWalk } from '../../src/sync/walk-pages.js';
import type { Warehouse } from '../../src/warehouse/types.js';

const record = (n: number): ServiceRecord => ({
  id: `D${String(n).padStart(17, '0')}`,
  properties: { name: `deal ${n}` },
  created_at: '2025-01-01T00:00:00.000000Z',
  updated_at: '2025-01-01T00:00:00.000000Z',
});

/** Pages of one record each; `cursor-k` follows page k; `failAt` throws instead of serving that page. */
function pagedApi(pageCount: number, events: string[], failAt?: number): SalesApi {
  return {
    async *listPages(): AsyncGenerator<ListPage<ServiceRecord>> {
      for (let k = 1; k <= pageCount; k++) {
        events.push(`fetch ${k}`);
        await new Promise((resolve) => setImmediate(resolve));
        if (k === failAt) throw new SalesyncError('service_unavailable', 'the service answered 503');
        yield { results: [record(k)], nextCursor: k === pageCount ? null : `cursor-${k}`, serverDate: '2025-01-01T00:00:00Z' };
      }
    },
  } as unknown as SalesApi;
}

function walkOf(api: SalesApi, commit: PageWalk['commit']): PageWalk {
  return {
    api,
    warehouse: {} as Warehouse,
    resource: 'deals',
    updatedAfter: null,
    after: null,
    settings: { lookbackMs: 0, flushRows: 1, flushIntervalMs: 60_000, detailConcurrency: 1 },
    log: pino({ level: 'silent' }),
    counters: { pages: 0, records: 0, details: 0 },
    progress: { resource: 'deals', phase: 'walking', pages: 0, records: 0, requests: 0, written: 0, startedAtMs: 0, resumed: false },
    report: () => undefined,
    commit,
  };
}

describe('walkPages', () => {
  it('fetches on and hands over the next batch while the previous commit is still being written, writing in order', async () => {
    const events: string[] = [];
    const commits: Array<{ ids: string[]; cursor: string | null }> = [];
    let releaseFirst: () => void = () => undefined;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    const commit = async (pages: BufferedPages, cursor: string | null, after: Promise<void> | undefined) => {
      events.push(`commit ${cursor ?? 'end'} called`);
      await after; // as the warehouse does: write only after the walk's previous commit
      commits.push({ ids: pages.records.map((r) => r.id), cursor });
      if (cursor === 'cursor-1') await firstHeld;
      events.push(`commit ${cursor ?? 'end'} done`);
    };
    const api = pagedApi(3, events);
    const walking = walkPages(walkOf(api, commit));
    // The first commit is held: the walk still fetches page 2 and hands its batch over (to be encoded meanwhile).
    while (!events.includes('commit cursor-2 called')) await new Promise((resolve) => setImmediate(resolve));
    expect(events).not.toContain('commit cursor-1 done');
    // Two commits in flight at most: the third batch waits for the first to finish.
    while (!events.includes('fetch 3')) await new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(events).not.toContain('commit end called');
    releaseFirst();
    await walking;
    expect(commits).toEqual([
      { ids: [record(1).id], cursor: 'cursor-1' },
      { ids: [record(2).id], cursor: 'cursor-2' },
      { ids: [record(3).id], cursor: null },
    ]);
    expect(events.indexOf('commit end called')).toBeGreaterThan(events.indexOf('commit cursor-1 done'));
  });

  it('stops at a failed commit: the commit handed over behind it writes nothing, and no later one is made', async () => {
    const events: string[] = [];
    const called: Array<string | null> = [];
    const written: Array<string | null> = [];
    const failure = new SalesyncError('warehouse_error', 'disk full');
    let failFirst: () => void = () => undefined;
    const firstFails = new Promise<void>((resolve) => (failFirst = resolve));
    const commit = async (_pages: BufferedPages, cursor: string | null, after: Promise<void> | undefined) => {
      called.push(cursor);
      await after;
      if (cursor === 'cursor-1') {
        await firstFails;
        throw failure;
      }
      written.push(cursor);
    };
    const walking = walkPages(walkOf(pagedApi(5, events), commit));
    while (!called.includes('cursor-2')) await new Promise((resolve) => setImmediate(resolve));
    failFirst();
    await expect(walking).rejects.toBe(failure);
    expect(called).toEqual(['cursor-1', 'cursor-2']);
    expect(written).toEqual([]);
    expect(events).not.toContain('fetch 5');
  });

  it('commits the pages fetched before a service failure with the cursor that follows them', async () => {
    const cursors: Array<string | null> = [];
    const walk = walkOf(pagedApi(5, [], 4), async (_pages, cursor) => {
      cursors.push(cursor);
    });
    walk.settings = { ...walk.settings, flushRows: 2 };
    await expect(walkPages(walk)).rejects.toMatchObject({ code: 'service_unavailable' });
    // Pages 1-2 were flushed by the policy; page 3 was waiting in the buffer when page 4 failed.
    expect(cursors).toEqual(['cursor-2', 'cursor-3']);
  });
});
