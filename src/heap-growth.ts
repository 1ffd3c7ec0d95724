/**
 * How far V8 lets the old generation grow past what survived its last full collection. By default it grows to up
 * to four times that on a small heap: a sync's live set stays near 25 MB, but its short-lived records promoted
 * between collections filled 90-116 MB of heap at a 1M-record sync's peak RSS. At 25 % the heap is collected
 * sooner and the peak fell by about 50 MB, for no more CPU (`npm run bench -- --only memory`, docs/performance.md).
 */
import { setFlagsFromString } from 'node:v8';

export const HEAP_GROWING_PERCENT = 25;

const FLAG = '--heap-growing-percent';

/**
 * The V8 flag a process sets for itself, or null when node was started with its own (`node --heap-growing-percent=N
 * …`: the operator's value stands). Pure.
 */
export function heapGrowthFlag(execArgv: readonly string[]): string | null {
  const given = execArgv.some(
    (arg) => arg === FLAG || arg.startsWith(`${FLAG}=`) || arg === '--heap_growing_percent' || arg.startsWith('--heap_growing_percent='),
  );
  return given ? null : `${FLAG}=${HEAP_GROWING_PERCENT}`;
}

/**
 * Set the flag (`heapGrowthFlag`) for this process, before its heap grows. V8 reads it at every full collection, so
 * a flag set once the process runs takes effect (a test proves it on this Node).
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): void {
  const flag = heapGrowthFlag(execArgv);
  if (flag !== null) setFlagsFromString(flag);
}
