import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SalesyncError } from '../../src/core/errors.js';
import type { ServiceRecord } from '../../src/core/types.js';
import { CommitQueue, commitsAllowed } from '../../src/sync/commit-queue.js';
import { WriterBacklog } from '../../src/sync/writer-backlog.js';
import { openWarehouse, type Warehouse } from '../../src/warehouse/index.js';

const ID = (n: number) => `D${String(n).padStart(17, '0')}`;
const deal = (n: number, name: string): ServiceRecord => ({
  id: ID(n),
  properties: { name },
  created_at: '2026-01-01T00:00:00Z',
  updated_at: `2026-01-0${n}T00:00:00Z`,
});
const checkpoint = (cursor: string) => ({ cursor, updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' as const });

describe('commitsAllowed', () => {
  it('lets three commits go ahead while the writer keeps up, and two once the walk has had to wait for it', () => {
    expect(commitsAllowed(false)).toBe(3);
    expect(commitsAllowed(true)).toBe(2);
  });
});

describe('CommitQueue', () => {
  it('writes in the order commits were queued, each after the one before it has been written', async () => {
    const queue = new CommitQueue();
    const order: string[] = [];
    const slow = (name: string, ms: number) => () => async () => {
      order.push(`${name} start`);
      await new Promise((resolve) => setTimeout(resolve, ms));
      order.push(`${name} end`);
    };
    await queue.push(slow('a', 30));
    await queue.push(slow('b', 1));
    await queue.drain();
    expect(order).toEqual(['a start', 'a end', 'b start', 'b end']);
  });

  it('decides what a commit writes only once a slot is free: a walk outrunning the writer holds no extra batch', async () => {
    const queue = new CommitQueue();
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const prepared: number[] = [];
    const commit = (n: number) => () => {
      prepared.push(n);
      return () => (n === 1 ? held : Promise.resolve());
    };
    await queue.push(commit(1));
    await queue.push(commit(2));
    await queue.push(commit(3));
    const fourth = queue.push(commit(4));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(prepared).toEqual([1, 2, 3]);
    release();
    await fourth;
    expect(prepared).toEqual([1, 2, 3, 4]);
    await queue.drain();
  });

  it('counts queued rows in the shared backlog until written or failed, and never waits on a full one with nothing of its own in flight', async () => {
    const backlog = new WriterBacklog();
    backlog.add(100); // other walks' rows, over this queue's cap
    const queue = new CommitQueue(backlog, 50);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Nothing of its own to wait for: it queues at once (waiting on others' commits could wait for ever).
    await queue.push(() => () => held, undefined, 7);
    expect(backlog.rows).toBe(107);
    let second = false;
    const pushing = queue.push(() => () => Promise.reject(new Error('disk full')), undefined, 5).then(() => (second = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(second).toBe(false); // over the cap, with a commit of its own in flight: waits for it
    release();
    await pushing;
    await expect(queue.drain()).rejects.toThrow('disk full');
    expect(backlog.rows).toBe(100);
  });

  it('tells the backlog each time a push is about to wait for the writer, and never when it goes straight ahead', async () => {
    let waits = 0;
    const backlog = new WriterBacklog(() => (waits += 1));
    const queue = new CommitQueue(backlog);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    await queue.push(() => () => held);
    await queue.push(() => () => Promise.resolve());
    await queue.push(() => () => Promise.resolve());
    expect(waits).toBe(0); // three in flight: none waited
    const fourth = queue.push(() => () => Promise.resolve());
    expect(waits).toBe(1); // the fourth waits for the first
    release();
    await fourth;
    await queue.drain();
    expect(waits).toBe(1);
  });

  it('with a real warehouse: a batch queued behind a commit that failed writes nothing, checkpoint included, and the failure is rethrown', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'salesync-queue-'));
    const warehouse: Warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
    try {
      await warehouse.applyPropertyDefinitions('deals', [
        { api_name: 'name', display_name: 'name', property_type: 'text', is_core: true, is_required_on_create: true, options: [] },
      ]);
      await warehouse.commitBatch('deals', { records: [deal(1, 'kept')], checkpoint: checkpoint('cursor-1') });
      const queue = new CommitQueue();
      const broken = { ...deal(3, 'broken'), id: null } as unknown as ServiceRecord;
      const commitOf = (records: ServiceRecord[], cursor: string) => () => {
        const batch = warehouse.prepareBatch('deals', { records, checkpoint: checkpoint(cursor) });
        return async () => void (await warehouse.commitBatch('deals', batch));
      };
      await queue.push(commitOf([broken], 'cursor-2'));
      await queue.push(commitOf([deal(4, 'not written')], 'cursor-3')).catch(() => undefined);
      await expect(queue.drain()).rejects.toMatchObject({ code: 'warehouse_error' });
      expect(await warehouse.query(`SELECT id, name FROM deals`)).toEqual([{ id: ID(1), name: 'kept' }]);
      expect((await warehouse.readState('deals')).walk?.cursor).toBe('cursor-1');
    } finally {
      await warehouse.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('discards each commit queued behind one that failed, and never writes it', async () => {
    const queue = new CommitQueue();
    const failure = new SalesyncError('warehouse_error', 'disk full');
    let release!: () => void;
    const failing = new Promise<void>((resolve) => (release = resolve)).then(() => Promise.reject(failure));
    const events: string[] = [];
    await queue.push(() => () => failing);
    await queue.push(() =>
      Object.assign(
        () => {
          events.push('written');
          return Promise.resolve();
        },
        { discard: () => events.push('discarded') },
      ),
    );
    release();
    await expect(queue.drain()).rejects.toBe(failure);
    expect(events).toEqual(['discarded']);
  });

  it('refuses a new commit once one has failed, with that failure', async () => {
    const queue = new CommitQueue();
    const failure = new SalesyncError('warehouse_error', 'disk full');
    await queue.push(() => () => Promise.reject(failure));
    await new Promise((resolve) => setTimeout(resolve, 5));
    await queue
      .push(() => () => Promise.resolve())
      .then(
        () => expect.unreachable(),
        (error: unknown) => expect(error).toBe(failure),
      );
    await expect(queue.drain()).rejects.toBe(failure);
  });
});
