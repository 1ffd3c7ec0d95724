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
  it('fetches the next page while the previous commit is still being written, and commits in order', async () => {
    const events: string[] = [];
    const commits: Array<{ ids: string[]; cursor: string | null }> = [];
    let releaseFirst: () => void = () => undefined;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    const commit = async (pages: BufferedPages, cursor: string | null) => {
      events.push(`commit ${cursor ?? 'end'} started`);
      commits.push({ ids: pages.records.map((r) => r.id), cursor });
      if (cursor === 'cursor-1') await firstHeld;
      events.push(`commit ${cursor ?? 'end'} done`);
    };
    const api = pagedApi(3, events);
    const walking = walkPages(walkOf(api, commit));
    // The first commit is held: the walk must still fetch page 2 meanwhile.
    while (!events.includes('fetch 2')) await new Promise((resolve) => setImmediate(resolve));
    expect(events).not.toContain('commit cursor-1 done');
    releaseFirst();
    await walking;
    expect(commits).toEqual([
      { ids: [record(1).id], cursor: 'cursor-1' },
      { ids: [record(2).id], cursor: 'cursor-2' },
      { ids: [record(3).id], cursor: null },
    ]);
    // Never two commits at once: each one starts after the previous one finished.
    expect(events.indexOf('commit cursor-2 started')).toBeGreaterThan(events.indexOf('commit cursor-1 done'));
    expect(events.indexOf('commit end started')).toBeGreaterThan(events.indexOf('commit cursor-2 done'));
  });

  it('stops at a failed commit and commits nothing after it', async () => {
    const events: string[] = [];
    const cursors: Array<string | null> = [];
    const failure = new SalesyncError('warehouse_error', 'disk full');
    const commit = async (_pages: BufferedPages, cursor: string | null) => {
      cursors.push(cursor);
      if (cursor === 'cursor-1') throw failure;
    };
    await expect(walkPages(walkOf(pagedApi(5, events), commit))).rejects.toBe(failure);
    expect(cursors).toEqual(['cursor-1']);
    expect(events).not.toContain('fetch 4');
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
