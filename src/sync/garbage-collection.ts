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

/**
 * `work`, run when called, but never sooner than `minIntervalMs` after it last started, nor sooner than its last
 * run took divided by `share`: a collection that marks a large live heap (a process that also holds a simulator's
 * records, say) spaces itself out to keep to that share of the main thread. `now` in milliseconds.
 */
export function paced(
  work: () => void,
  pace: { minIntervalMs: number; share: number },
  now: () => number = () => performance.now(),
): () => void {
  let next = Number.NEGATIVE_INFINITY;
  return () => {
    const started = now();
    if (started < next) return;
    work();
    next = started + Math.max(pace.minIntervalMs, (now() - started) / pace.share);
  };
}
