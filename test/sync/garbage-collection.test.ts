import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { atMostEvery, v8FullCollection } from '../../src/sync/garbage-collection.js';

describe('v8FullCollection', () => {
  it("collects an unreachable object on demand without exposing gc to this process's other code", async () => {
    const collect = v8FullCollection();
    expect(collect).toBeTypeOf('function');
    const ref = ((): WeakRef<object> => new WeakRef({ payload: new Array(1000).fill(1) }))();
    // A WeakRef's target is kept until the job that made it ends.
    await new Promise((resolve) => setImmediate(resolve));
    collect!();
    expect(ref.deref()).toBeUndefined();
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });
});

describe('atMostEvery', () => {
  it('runs the work on the first call, then only once the interval has passed since it last ran', () => {
    let now = 0;
    let runs = 0;
    const tick = atMostEvery(
      1000,
      () => (runs += 1),
      () => now,
    );
    tick();
    now = 999;
    tick();
    expect(runs).toBe(1);
    now = 1000;
    tick();
    now = 1500;
    tick();
    expect(runs).toBe(2);
  });
});
