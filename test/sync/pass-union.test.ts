import { describe, expect, it } from 'vitest';
import { PassUnion } from '../../src/sync/pass-union.js';

const START = '2026-01-01T00:00:00.000000Z';
const OLD = '2025-12-31T00:00:00.000000Z';

/** A pass over a still list of `places` records that received `ids` (some twice, so others never). */
function pass(union: PassUnion, ids: string[], places = ids.length, maxUpdatedAt: string | null = OLD, onlyRepeats = true) {
  for (const id of ids) union.add(id);
  return union.after({ positions: places, onlyRepeats, maxUpdatedAt });
}

describe('passes taken together over a list that stood still', () => {
  it('cover the window once they named as many ids as each pass had places, and stop gaining after two passes that named none new', () => {
    const union = new PassUnion(START);
    expect(pass(union, ['a', 'b', 'b', 'd'])).toBe('open');
    expect(union.gaining).toBe(true);
    expect(pass(union, ['a', 'a', 'b', 'd'])).toBe('open');
    expect(union.gaining).toBe(true);
    expect(pass(union, ['b', 'b', 'a', 'd'])).toBe('open');
    expect(union.gaining).toBe(false);
    expect(pass(union, ['a', 'c', 'c', 'd'])).toBe('covered');
    expect(union.maxUpdatedAt).toBe(OLD);
  });

  it('break when a pass had another number of places (a record deleted or created between passes)', () => {
    const union = new PassUnion(START);
    expect(pass(union, ['a', 'b', 'b', 'd'])).toBe('open');
    expect(pass(union, ['a', 'c', 'd'])).toBe('broken');
  });

  it('break when a pass received a record stamped at or after the union began, even within its whole second (the list changed), or had another flaw', () => {
    const changed = new PassUnion(START);
    expect(pass(changed, ['a', 'b', 'b', 'd'], 4, '2025-12-31T23:59:59.999999Z')).toBe('open');
    expect(pass(changed, ['a', 'c', 'c', 'd'], 4, '2026-01-01T00:00:00.000001Z')).toBe('broken');
    const flawed = new PassUnion(START);
    expect(pass(flawed, ['a', 'b', 'c', 'd', 'd'], 5, OLD, false)).toBe('broken');
  });
});
