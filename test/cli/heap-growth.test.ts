/**
 * The CLI caps how far V8's old generation grows past its live set (`limitHeapGrowth`): set once the process runs,
 * the flag must still take effect, or a sync's short-lived records fill the heap to several times what it holds.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, heapGrowthFlag } from '../../src/heap-growth.js';
import { projectRoot } from '../../src/core/paths.js';

const run = promisify(execFile);
const MODULE = join(projectRoot(import.meta.url), 'dist', 'src', 'heap-growth.js');

// A live set of about 25 MB, then garbage of which the last few batches survive a scavenge or two before dying,
// as a walk's records do; prints the largest heap V8 committed.
const CHURN = `
const { limitHeapGrowth } = await import(process.argv[1]);
if (process.argv[2] === 'limit') limitHeapGrowth();
const live = Array.from({ length: 250_000 }, (_, i) => ({ i, s: \`live-\${i}\`.repeat(8) }));
let peak = 0;
const held = [];
for (let round = 0; round < 400; round++) {
  held.push(Array.from({ length: 5_000 }, (_, i) => ({ round, i, s: \`garbage-\${round}-\${i}\`.repeat(4) })));
  if (held.length > 8) held.shift();
  await new Promise((resolve) => setImmediate(resolve));
  peak = Math.max(peak, process.memoryUsage().heapTotal);
}
console.log(Math.round(peak / 2 ** 20), live.length);
`;

async function peakHeapMb(mode: 'limit' | 'default'): Promise<number> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', CHURN, MODULE, mode]);
  return Number(stdout.trim().split(' ')[0]);
}

describe('heapGrowthFlag', () => {
  it('asks V8 to grow the old generation by a quarter past its live set', () => {
    expect(HEAP_GROWING_PERCENT).toBe(25);
    expect(heapGrowthFlag([])).toBe('--heap-growing-percent=25');
    expect(heapGrowthFlag(['--max-old-space-size=160'])).toBe('--heap-growing-percent=25');
  });

  it("leaves the operator's own value when node was started with one", () => {
    expect(heapGrowthFlag(['--heap-growing-percent=100'])).toBeNull();
    expect(heapGrowthFlag(['--heap_growing_percent=0'])).toBeNull();
    expect(heapGrowthFlag(['--heap-growing-percent', '50'])).toBeNull();
  });
});

describe('limitHeapGrowth', () => {
  it('set while the process runs, holds a churning heap near its live set: well under what V8 grows to by default', async () => {
    const [limited, unlimited] = [await peakHeapMb('limit'), await peakHeapMb('default')];
    expect(limited).toBeLessThan(0.7 * unlimited);
  }, 30_000);
});
