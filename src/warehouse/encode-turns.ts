/** A batch's encoding in turns of the event loop bounded in time. */
import type { ServiceRecord } from '../core/types.js';
import type { ColumnPlan } from './types.js';
import { joinIds, NdjsonRows, recordEncoder } from './rows.js';

/**
 * How long the encoder may hold the event loop before it lets others in: a large batch never holds up the pages
 * other walks await, nor the answers of the commit in flight, by more than this, however wide its records and
 * however slow the machine (a fixed count of records per turn took 2 ms on one machine, far more when wide).
 */
export const ENCODE_TURN_MS = 1;

/** `each` of `items` in order, yielding to the event loop whenever a turn has lasted `turnMs` by `now` (ms). */
export async function eachInTurns<T>(
  items: readonly T[],
  each: (item: T) => void,
  turnMs = ENCODE_TURN_MS,
  now: () => number = () => performance.now(),
): Promise<void> {
  let turnStarted = now();
  for (const item of items) {
    if (now() - turnStarted >= turnMs) {
      await new Promise((resolve) => setImmediate(resolve));
      turnStarted = now();
    }
    each(item);
  }
}

/** `encodeRecords` of (deduplicated) records, in turns of the event loop (`eachInTurns`). */
export async function encodeInTurns(
  records: readonly ServiceRecord[],
  plan: readonly ColumnPlan[],
  syncedAt: string,
  turnMs = ENCODE_TURN_MS,
  now: () => number = () => performance.now(),
): Promise<NdjsonRows> {
  const encode = recordEncoder(plan, syncedAt);
  const rows = new NdjsonRows();
  await eachInTurns(records, (record) => rows.pushEncoded(encode(record)), turnMs, now);
  rows.ids = joinIds(records.map((r) => r.id));
  return rows;
}
