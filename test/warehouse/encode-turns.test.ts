import { describe, expect, it } from 'vitest';
import type { ServiceRecord } from '../../src/core/types.js';
import { encodeInTurns } from '../../src/warehouse/encode-turns.js';
import { encodeRecords } from '../../src/warehouse/rows.js';
import { turnsOthersGot } from '../support/event-loop-turns.js';

const records: ServiceRecord[] = Array.from({ length: 120 }, (_, i) => ({
  id: `D${String(i).padStart(17, '0')}`,
  properties: { name: `Deal ${i}`, amount: i },
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-02T00:00:00Z',
}));
const syncedAt = '2026-01-03T00:00:00Z';

describe('encodeInTurns', () => {
  it('encodes exactly what encodeRecords does', async () => {
    const inTurns = await encodeInTurns(records, [], syncedAt, 0);
    expect(Buffer.concat(inTurns.bytes())).toEqual(Buffer.concat(encodeRecords(records, [], syncedAt).bytes()));
    expect(inTurns.rows).toBe(records.length);
  });

  it('lets the event loop in whenever a turn has lasted its budget, however few records that took', async () => {
    // Each look at the clock finds 0.4 ms more: a 1 ms turn is over after three records.
    let clock = 0;
    const slow = await turnsOthersGot(() => encodeInTurns(records, [], syncedAt, 1, () => (clock += 0.4)));
    expect(slow).toBeGreaterThanOrEqual(records.length / 4);
  });

  it('holds the event loop for a whole batch that takes less than a turn, however many records it has', async () => {
    const fast = await turnsOthersGot(() => encodeInTurns(records, [], syncedAt, 1, () => 0));
    expect(fast).toBeLessThanOrEqual(1);
  });
});
