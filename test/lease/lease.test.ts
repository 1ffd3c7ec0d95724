import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { acquireLease, leaseHolder, tryAcquireLease } from '../../src/lease/index.js';
import { useTestRedis } from '../support/use-redis.js';

const redis = useTestRedis();

describe('lease', () => {
  it('has one holder at a time, and only the owner releases it', async () => {
    const client = redis.connect();
    const key = `${redis.prefix}:lease:a`;
    const first = await tryAcquireLease(client, key, { ttlMs: 5000, holder: 'first' });
    expect(first).not.toBeNull();
    expect(await tryAcquireLease(client, key, { ttlMs: 5000, holder: 'second' })).toBeNull();
    expect(await leaseHolder(client, key)).toBe('first');
    // Someone else's lease under the same key is never deleted by a stale holder.
    await client.set(key, 'intruder|x');
    await first!.release();
    expect(await client.get(key)).toBe('intruder|x');
    await client.del(key);
  });

  it('is renewed while held, and lapses when its holder stops renewing (a crash)', async () => {
    const client = redis.connect();
    const key = `${redis.prefix}:lease:b`;
    const held = await tryAcquireLease(client, key, { ttlMs: 300, holder: 'alive' });
    await sleep(700);
    expect(await leaseHolder(client, key)).toBe('alive');
    await held!.release();
    expect(await leaseHolder(client, key)).toBeNull();

    // A holder that dies: set without renewal, as a SIGKILLed process leaves it.
    await client.set(key, 'dead pid 1|t', 'PX', 300);
    const seen: string[] = [];
    const taken = await acquireLease(client, key, { ttlMs: 300, waitMs: 2000, onHeld: (h) => seen.push(h) });
    expect(taken).not.toBeNull();
    expect(seen).toEqual(['dead pid 1']);
    await taken!.release();
  });

  it('signals the holder when its lease is lost, and a bounded wait gives up', async () => {
    const client = redis.connect();
    const key = `${redis.prefix}:lease:c`;
    const held = await tryAcquireLease(client, key, { ttlMs: 300 });
    await client.set(key, 'thief|t', 'PX', 5000);
    await sleep(250);
    expect(held!.lost.aborted).toBe(true);
    const started = Date.now();
    expect(await acquireLease(client, key, { ttlMs: 300, waitMs: 300 })).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    await held!.release();
    expect(await client.get(key)).toBe('thief|t');
  });
});
