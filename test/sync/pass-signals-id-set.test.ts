import { describe, expect, it } from 'vitest';
import { hashId, IdHashSet } from '../../src/sync/id-set.js';

const id = (n: number) => `D${String(n).padStart(17, '0')}`;

describe('IdHashSet', () => {
  it('says an id is new the first time and repeated every time after', () => {
    const set = new IdHashSet();
    expect(set.add('a'.repeat(18))).toBe(true);
    expect(set.add('b'.repeat(18))).toBe(true);
    expect(set.add('a'.repeat(18))).toBe(false);
    expect(set.has('b'.repeat(18))).toBe(true);
    expect(set.has('c'.repeat(18))).toBe(false);
    expect(set.size).toBe(2);
  });

  it('keeps every id through many growths, and catches each repeat after them', () => {
    const set = new IdHashSet(16);
    const startBytes = set.bytes;
    const n = 200_000;
    let added = 0;
    for (let i = 0; i < n; i += 1) if (set.add(id(i))) added += 1;
    expect(added).toBe(n);
    expect(set.size).toBe(n);
    expect(set.bytes).toBeGreaterThan(startBytes * 1000);
    // A small constant per id: at most 70 % of the slots used, so under 24 bytes each.
    expect(set.bytes / n).toBeLessThan(24);
    let repeats = 0;
    for (let i = 0; i < n; i += 7) if (!set.add(id(i))) repeats += 1;
    expect(repeats).toBe(Math.ceil(n / 7));
    let found = 0;
    for (let i = n; i < n + 1000; i += 1) if (set.has(id(i))) found += 1;
    expect(found).toBe(0);
    expect(set.size).toBe(n);
  });

  it('hashes ids to distinct 53-bit numbers', () => {
    const ids = Array.from({ length: 50_000 }, (_, i) => `id${String(i).padStart(16, '0')}`);
    const hashes = new Set(ids.map(hashId));
    expect(hashes.size).toBe(ids.length);
    for (const h of [...hashes].slice(0, 100)) expect(Number.isSafeInteger(h)).toBe(true);
  });
});
