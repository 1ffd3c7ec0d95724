/**
 * How far V8 lets the old generation grow past what survived its last full collection. By default a small heap may
 * grow to four times that, and a sync's live set is small while its walks promote short-lived records between
 * collections: that garbage, not what the sync holds, set the heap's size at a large sync's peak RSS. A quarter past
 * the live set collects it sooner (docs/performance.md, "V8's heap growth").
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
