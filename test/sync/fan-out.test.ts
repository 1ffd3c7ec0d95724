import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { fanOut } from '../../src/sync/fan-out.js';

/** A request's listeners on its signal while in flight: got's, the limiter's wait, a retry's sleep. */
function request(signal: AbortSignal | undefined, until: Promise<void>): Promise<void> {
  const listeners = [0, 1, 2].map(() => () => undefined);
  for (const listener of listeners) signal?.addEventListener('abort', listener);
  return until.finally(() => {
    for (const listener of listeners) signal?.removeEventListener('abort', listener);
  });
}

/** Node's MaxListenersExceededWarnings while `work` runs. */
async function leakWarnings(work: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const onWarning = (warning: Error) => {
    if (warning.name === 'MaxListenersExceededWarning') seen.push(warning.message);
  };
  process.on('warning', onWarning);
  try {
    await work();
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    return seen;
  } finally {
    process.off('warning', onWarning);
  }
}

describe('fanOut', () => {
  it('gives back every result in the order of its items, at most `concurrency` at a time', async () => {
    let inFlight = 0;
    let most = 0;
    const results = await fanOut([5, 1, 4, 2, 3], 2, undefined, async (n) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, n));
      inFlight -= 1;
      return n * 10;
    });
    expect(results).toEqual([50, 10, 40, 20, 30]);
    expect(most).toBe(2);
  });

  it("lets 32 requests at once hold their listeners without a memory-leak warning, one listener on the caller's signal", async () => {
    const controller = new AbortController();
    let callersListeners = -1;
    let release!: () => void;
    const until = new Promise<void>((resolve) => (release = resolve));
    const warnings = await leakWarnings(async () => {
      const done = fanOut(
        Array.from({ length: 32 }, (_, i) => i),
        32,
        controller.signal,
        (_, signal) => request(signal, until),
      );
      await new Promise((resolve) => setImmediate(resolve));
      callersListeners = getEventListeners(controller.signal, 'abort').length;
      release();
      await done;
    });
    expect(warnings).toEqual([]);
    expect(callersListeners).toBeLessThanOrEqual(1);
  });

  it("aborts every request with the caller's reason when the caller's signal aborts", async () => {
    const controller = new AbortController();
    const reasons: unknown[] = [];
    const done = fanOut([1, 2, 3], 3, controller.signal, (_, signal) => {
      return new Promise<void>((resolve) => signal!.addEventListener('abort', () => (reasons.push(signal!.reason), resolve())));
    });
    await new Promise((resolve) => setImmediate(resolve)); // every request under way
    const reason = new Error('stopped');
    controller.abort(reason);
    await done;
    expect(reasons).toEqual([reason, reason, reason]);
  });
});
