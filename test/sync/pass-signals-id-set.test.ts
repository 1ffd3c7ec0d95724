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
    expect(set.bytes).toBeGreaterThan(startBytes * 10);
    // 5 bytes a slot, at least 35 % of the slots used once grown: under 15 bytes an id.
    expect(set.bytes / n).toBeLessThan(15);
    let repeats = 0;
    for (let i = 0; i < n; i += 7) if (!set.add(id(i))) repeats += 1;
    expect(repeats).toBe(Math.ceil(n / 7));
    let found = 0;
    for (let i = n; i < n + 1000; i += 1) if (set.has(id(i))) found += 1;
    expect(found).toBe(0);
    expect(set.size).toBe(n);
  });

  it('hashes ids to distinct 48-bit keys (shard, key, tag), different under another seed', () => {
    const out = new Uint32Array(2);
    const keyOf = (value: string, seed: number) => {
      hashId(value, seed, out);
      return `${out[1]! >>> 16}:${out[0]}`;
    };
    const ids = Array.from({ length: 50_000 }, (_, i) => `id${String(i).padStart(16, '0')}`);
    expect(new Set(ids.map((value) => keyOf(value, 1))).size).toBe(ids.length);
    const moved = ids.filter((value) => keyOf(value, 1) !== keyOf(value, 2)).length;
    expect(moved).toBe(ids.length);
  });

  it('finds the same ids whatever its seed', () => {
    for (const seed of [0, 1, 2 ** 32 - 1]) {
      const set = new IdHashSet(16, seed);
      for (let i = 0; i < 5000; i += 1) set.add(id(i));
      expect(set.size).toBe(5000);
      for (let i = 0; i < 5000; i += 1) expect(set.has(id(i))).toBe(true);
      for (let i = 5000; i < 6000; i += 1) expect(set.has(id(i))).toBe(false);
    }
  });
});
