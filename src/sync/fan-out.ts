/** Single-record GETs many at once on one abort signal: the fan-out of details, summaries and confirmations. */
import { setMaxListeners } from 'node:events';
import pLimit from 'p-limit';

/** The abort listeners one request in flight may hold on its signal at once: got's, the limiter's wait, a retry's sleep. */
const LISTENERS_PER_REQUEST = 3;

/** Node's own default, kept for whatever else listens to the fan-out's signal. */
const OTHER_LISTENERS = 10;

/**
 * `work` for each of `items`, `concurrency` at a time; the results in the items' order. The requests share a child
 * of `signal` (one listener on `signal` however many are in flight), allowed the listeners they hold together: past
 * ten, Node would print a memory-leak warning on the operator's terminal for a fan-out that cleans up after itself.
 */
export function fanOut<T, R>(
  items: readonly T[],
  concurrency: number,
  signal: AbortSignal | undefined,
  work: (item: T, signal: AbortSignal | undefined) => Promise<R>,
): Promise<R[]> {
  const limit = pLimit(concurrency);
  let shared = signal;
  if (signal) {
    shared = AbortSignal.any([signal]);
    setMaxListeners(concurrency * LISTENERS_PER_REQUEST + OTHER_LISTENERS, shared);
  }
  return Promise.all(items.map((item) => limit(() => work(item, shared))));
}
