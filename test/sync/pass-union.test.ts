import { describe, expect, it } from 'vitest';
import { PassUnion } from '../../src/sync/pass-union.js';

const START = '2026-01-01T00:00:00.000000Z';
const OLD = '2025-12-31T00:00:00.000000Z';

/** A pass over a still list of `places` records that received `ids` (some twice, so others never). */
function pass(
  union: PassUnion,
  ids: string[],
  places = ids.length,
  maxUpdatedAt: string | null = OLD,
  onlyRepeats = true,
  newSinceStart = false,
) {
  for (const id of ids) union.add(id);
  return union.after({ positions: places, onlyRepeats, newSinceStart, maxUpdatedAt });
}

describe('passes taken together over a list that stood still', () => {
  it('cover the window once they named as many ids as each pass had places', () => {
    const union = new PassUnion(START);
    expect(pass(union, ['a', 'b', 'b', 'd'])).toBe('open');
    expect(pass(union, ['a', 'a', 'b', 'd'])).toBe('open');
    expect(pass(union, ['a', 'c', 'c', 'd'])).toBe('covered');
    expect(union.maxUpdatedAt).toBe(OLD);
  });

  it('go on while passes that named nothing new could well have left out what is missing by chance', () => {
    // The first pass names 3 of 4: a pass is taken to leave out at least 37 % of what it could, and 0.37^k, for k
    // passes in a row that named nothing new, falls below 0.001 at k = 7. Two such passes once ended the union.
    const union = new PassUnion(START);
    const gaining: boolean[] = [];
    for (let k = 0; k < 8; k++) {
      pass(union, ['a', 'b', 'b', 'd']);
      gaining.push(union.gaining);
    }
    expect(gaining).toEqual([true, true, true, true, true, true, true, false]);
  });

  it('break when a pass had another number of places (a record deleted or created between passes)', () => {
    const union = new PassUnion(START);
    expect(pass(union, ['a', 'b', 'b', 'd'])).toBe('open');
    expect(pass(union, ['a', 'c', 'd'])).toBe('broken');
  });

  it('break when a pass received a record stamped at or after the union began that its first pass did not receive so, even within its whole second (the list changed), or had another flaw', () => {
    const changed = new PassUnion(START);
    expect(pass(changed, ['a', 'b', 'b', 'd'], 4, '2025-12-31T23:59:59.999999Z')).toBe('open');
    changed.stamped('c', '2026-01-01T00:00:00.000001Z');
    expect(pass(changed, ['a', 'c', 'c', 'd'])).toBe('broken');
    const flawed = new PassUnion(START);
    expect(pass(flawed, ['a', 'b', 'c', 'd', 'd'], 5, OLD, false)).toBe('broken');
    // The first pass itself received a record changed within the second it began (behind its cursor, an id twice).
    const changedInFirst = new PassUnion(START);
    expect(pass(changedInFirst, ['a', 'b', 'b', 'd'], 4, '2026-01-01T00:00:00.5Z', true, true)).toBe('broken');
  });

  it('do not break on records stamped after the union began that its first pass received alike (a Date header behind the records: changed before it began)', () => {
    const AFTER = '2026-01-01T00:00:01.5Z';
    const union = new PassUnion(START, undefined, new Map([['b', AFTER]]));
    for (const id of ['a', 'b', 'b', 'd']) union.add(id);
    union.stamped('b', '2026-01-01T09:00:01.500000+09:00');
    expect(union.after({ positions: 4, onlyRepeats: true, newSinceStart: false, maxUpdatedAt: AFTER })).toBe('open');
    union.stamped('b', '2026-01-01T00:00:02Z');
    expect(pass(union, ['a', 'c', 'c', 'd'], 4, '2026-01-01T00:00:02Z')).toBe('broken');
  });
});
