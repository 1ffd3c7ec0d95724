import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { paced, v8FullCollection } from '../../src/sync/garbage-collection.js';

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

describe('paced', () => {
  it('runs the work on the first call, then only once the minimum interval has passed since it last started', () => {
    let now = 0;
    let runs = 0;
    const tick = paced(
      () => (runs += 1),
      { minIntervalMs: 1000, share: 0.05 },
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

  it('spaces out work that takes long so that it keeps to its share of the thread', () => {
    let now = 0;
    let runs = 0;
    // Each run takes 400 ms: at a 5 % share the next may start 8 s after this one did.
    const tick = paced(
      () => {
        runs += 1;
        now += 400;
      },
      { minIntervalMs: 1000, share: 0.05 },
      () => now,
    );
    tick();
    now = 7999;
    tick();
    expect(runs).toBe(1);
    now = 8000;
    tick();
    expect(runs).toBe(2);
  });
});
