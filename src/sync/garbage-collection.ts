/**
 * A full collection of the JS heap while the walks wait for the writer. The pages of batches already handed to
 * the writer are garbage, but V8 lets its heap grow well past what a sync keeps alive before it collects; a walk
 * waiting at the writer backlog leaves the main thread idle, which is when collecting costs the sync nothing.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * V8's full collection, which Node hands out only behind `--expose-gc`: the flag is set just long enough for a new
 * context to get `gc`, so nothing else sees it. Undefined where this V8 refuses.
 */
export function v8FullCollection(): (() => void) | undefined {
  const exposed: unknown = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return exposed as () => void;
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** `work`, run at most once in any `intervalMs` however often the result is called. `now` in milliseconds. */
export function atMostEvery(intervalMs: number, work: () => void, now: () => number = () => performance.now()): () => void {
  let last = Number.NEGATIVE_INFINITY;
  return () => {
    const at = now();
    if (at - last < intervalMs) return;
    last = at;
    work();
  };
}
