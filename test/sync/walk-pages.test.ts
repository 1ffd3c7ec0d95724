import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ListPage, SalesApi } from '../../src/api/types.js';
import { SalesyncError } from '../../src/core/errors.js';
import type { ServiceRecord } from '../../src/core/types.js';
import { DEFAULT_CONFIG } from '../../src/config.js';
import { syncSettings } from '../../src/sync/environment.js';
import { walkPages, type BufferedPages, type PageWalk } from '../../src/sync/walk-pages.js';
import { trackProgress } from '../../src/sync/progress.js';
import type { Warehouse } from '../../src/warehouse/types.js';
import type { RecordList } from '../../src/warehouse/index.js';
import { WriterBacklog } from '../../src/sync/writer-backlog.js';
import { backlogCap, grownBatchRows } from '../../src/sync/window.js';

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
        yield { results: [record(k)], nextCursor: k === pageCount ? null : `cursor-${k}`, serverDate: '2025-01-01T00:00:00Z', rejects: [] };
      }
    },
  } as unknown as SalesApi;
}

/** A commit per batch whose write (run after its predecessor's, by the walk's queue) ends only once released. */
function gatedCommits(events: string[], commits: Array<{ ids: string[]; cursor: string | null }>) {
  const gates = new Map<string, { open: Promise<void>; release: () => void }>();
  let all = false;
  const gate = (cursor: string) => {
    let entry = gates.get(cursor);
    if (!entry) {
      let release: () => void = () => undefined;
      const open = new Promise<void>((resolve) => (release = resolve));
      gates.set(cursor, (entry = { open, release }));
      if (all) release();
    }
    return entry;
  };
  return {
    commit: (pages: BufferedPages, cursor: string | null) => {
      const name = cursor ?? 'end';
      events.push(`commit ${name} called`);
      return async () => {
        commits.push({ ids: (pages.records as RecordList).records.map((r) => r.id), cursor });
        await gate(name).open;
        events.push(`commit ${name} done`);
      };
    },
    release: (cursor: string) => gate(cursor).release(),
    releaseAll: () => {
      all = true;
      for (const entry of gates.values()) entry.release();
    },
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
/** Waits a bounded number of turns for `condition`, so a walk that never gets there fails fast, not at the timeout. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (condition()) return;
    await turn();
  }
  throw new Error(`never happened: ${condition.toString()}`);
}
/** Enough turns of the event loop for anything not waiting on a commit to have happened. */
async function settleTurns(): Promise<void> {
  for (let i = 0; i < 20; i++) await turn();
}

function walkOf(api: SalesApi, commit: PageWalk['commit']): PageWalk {
  return {
    api,
    warehouse: {} as Warehouse,
    resource: 'deals',
    updatedAfter: null,
    after: null,
    settings: { ...syncSettings(DEFAULT_CONFIG), flushRows: 1, flushIntervalMs: 60_000, detailConcurrency: 1 },
    log: pino({ level: 'silent' }),
    counters: { pages: 0, records: 0, details: 0 },
    progress: trackProgress('deals', 0, () => 0).progress,
    // So wide that batches never grow (`grownBatchRows`): these tests pin the queue's allowance, one page a batch.
    propertyColumns: 1_000_000,
    report: () => undefined,
    commit,
  };
}

describe('walkPages', () => {
  it('fetches on and hands over the next batches while the first commit is still being written, writing in order', async () => {
    const events: string[] = [];
    const commits: Array<{ ids: string[]; cursor: string | null }> = [];
    const gates = gatedCommits(events, commits);
    const walking = walkPages(walkOf(pagedApi(5, events), gates.commit));
    // The first commit is held: the walk still fetches pages 2 and 3 and hands their batches over (to be
    // encoded meanwhile): it has not waited for the writer yet, so three may be in flight.
    await until(() => events.includes('commit cursor-3 called'));
    await settleTurns();
    expect(events).not.toContain('commit cursor-4 called');
    gates.releaseAll();
    await walking;
    expect(commits.map((c) => c.cursor)).toEqual(['cursor-1', 'cursor-2', 'cursor-3', 'cursor-4', null]);
    expect(commits[0]!.ids).toEqual([record(1).id]);
    expect(events.indexOf('commit cursor-4 called')).toBeGreaterThan(events.indexOf('commit cursor-1 done'));
  });

  it('keeps two commits in flight once it has had to wait for the writer: a walk outrunning it holds no more records', async () => {
    const events: string[] = [];
    const gates = gatedCommits(events, []);
    const walking = walkPages(walkOf(pagedApi(6, events), gates.commit));
    await until(() => events.includes('fetch 4'));
    await settleTurns();
    expect(events).not.toContain('commit cursor-4 called'); // waits: three in flight
    gates.release('cursor-1');
    await until(() => events.includes('commit cursor-4 called'));
    await until(() => events.includes('fetch 5'));
    await settleTurns();
    // Having waited, the walk allows two: batch 5 waits for both cursor-2 and cursor-3, not just the oldest.
    gates.release('cursor-2');
    await settleTurns();
    expect(events).not.toContain('commit cursor-5 called');
    gates.release('cursor-3');
    await until(() => events.includes('commit cursor-5 called'));
    gates.releaseAll();
    await walking;
  });

  it('while a commit is being written, grows the next batch to its grown size rather than hand over a small one, each with the cursor after its last page', async () => {
    const events: string[] = [];
    const commits: Array<{ ids: string[]; cursor: string | null }> = [];
    const gates = gatedCommits(events, commits);
    // flushRows 1 and 128 properties: batches may grow to 5.
    expect(grownBatchRows(1, 128)).toBe(5);
    const walk = { ...walkOf(pagedApi(20, events), gates.commit), propertyColumns: 128 };
    const walking = walkPages(walk);
    // The first page goes to an idle writer alone; with it held, pages 2-6, 7-11 and 12-16 grow into batches of
    // five. Two of them are handed over (three commits in flight); the third waits for the writer.
    await until(() => events.includes('fetch 16'));
    await settleTurns();
    expect(events.filter((e) => e.endsWith('called'))).toEqual([
      'commit cursor-1 called',
      'commit cursor-6 called',
      'commit cursor-11 called',
    ]);
    expect(events).not.toContain('fetch 17');
    gates.releaseAll();
    await walking;
    expect(commits.slice(0, 4).map((c) => c.ids.length)).toEqual([1, 5, 5, 5]);
    expect(commits.slice(0, 4).map((c) => c.cursor)).toEqual(['cursor-1', 'cursor-6', 'cursor-11', 'cursor-16']);
    // Every record committed once, in order, whatever the batch sizes.
    expect(commits.flatMap((c) => c.ids)).toEqual(Array.from({ length: 20 }, (_, i) => record(i + 1).id));
    expect(commits.at(-1)!.cursor).toBeNull();
  });

  it("with the process's writer backlog at its cap (other walks' commits), grows its next batch and queues it only once its first is written", async () => {
    const events: string[] = [];
    const commits: Array<{ ids: string[]; cursor: string | null }> = [];
    const gates = gatedCommits(events, commits);
    // flushRows 1 and 128 properties: batches may grow to 5, and the process backlog's cap is 15 rows.
    expect(backlogCap(1, 128)).toBe(15);
    const backlog = new WriterBacklog();
    backlog.add(15); // what other walks of the process have queued for the writer
    const walking = walkPages({ ...walkOf(pagedApi(10, events), gates.commit), propertyColumns: 128, writerBacklog: backlog });
    // Alone it would have three one-page commits in flight (first test); beside a full backlog its first is
    // queued, pages 2-6 grow into one batch, and that waits for the first to be written.
    await until(() => events.includes('fetch 6'));
    await settleTurns();
    expect(events.filter((e) => e.endsWith('called'))).toEqual(['commit cursor-1 called']);
    expect(events).not.toContain('fetch 7');
    expect(backlog.rows).toBe(16);
    gates.release('cursor-1');
    await until(() => events.includes('commit cursor-6 called'));
    // The other walks' commits are written: the backlog has room again.
    backlog.release(15);
    gates.releaseAll();
    await walking;
    expect(commits[1]!.ids).toHaveLength(5);
    expect(commits.flatMap((c) => c.ids)).toEqual(Array.from({ length: 10 }, (_, i) => record(i + 1).id));
    // Every row it queued has left the backlog, written.
    expect(backlog.rows).toBe(0);
  });

  it('stops at a failed commit: the commit handed over behind it writes nothing, and no later one is made', async () => {
    const events: string[] = [];
    const called: Array<string | null> = [];
    const written: Array<string | null> = [];
    const failure = new SalesyncError('warehouse_error', 'disk full');
    let failFirst: () => void = () => undefined;
    const firstFails = new Promise<void>((resolve) => (failFirst = resolve));
    const commit = (_pages: BufferedPages, cursor: string | null) => {
      called.push(cursor);
      return async () => {
        if (cursor === 'cursor-1') {
          await firstFails;
          throw failure;
        }
        written.push(cursor);
      };
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
    const walk = walkOf(pagedApi(5, [], 4), (_pages, cursor) => async () => {
      cursors.push(cursor);
    });
    walk.settings = { ...walk.settings, flushRows: 2 };
    await expect(walkPages(walk)).rejects.toMatchObject({ code: 'service_unavailable' });
    // Pages 1-2 were flushed by the policy; page 3 was waiting in the buffer when page 4 failed.
    expect(cursors).toEqual(['cursor-2', 'cursor-3']);
  });
});
