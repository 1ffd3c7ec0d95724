import { describe, expect, it } from 'vitest';
import { ChunkCarver, SlabPool } from '../../src/warehouse/slab-pool.js';

describe('ChunkCarver', () => {
  it('gives a buffer back once, when no more is carved from it and every chunk carved from it is written', () => {
    const pool = new SlabPool(100);
    const carver = new ChunkCarver(pool);
    const a = carver.carve(40);
    const b = carver.carve(40);
    expect(a.source).toBe(b.source);
    expect(a.chunk.buffer).toBe(b.chunk.buffer);
    // The third does not fit: a new buffer, and the first is carved no more.
    const c = carver.carve(40);
    expect(c.source).not.toBe(a.source);
    carver.written([a.source]);
    expect(pool.idle).toBe(0);
    carver.written([b.source]);
    expect(pool.idle).toBe(1);
    // The second still carving: written, it stays until retired.
    carver.written([c.source]);
    expect(pool.idle).toBe(1);
    carver.retire();
    expect(pool.idle).toBe(2);
    carver.retire();
    expect(pool.idle).toBe(2);
  });

  it('reuses a buffer given back, and gives each chunk larger than a buffer, or with no pool, a buffer of its own', () => {
    const pool = new SlabPool(100);
    const first = new ChunkCarver(pool);
    const a = first.carve(60);
    first.retire();
    first.written([a.source]);
    const second = new ChunkCarver(pool);
    expect(second.carve(10).chunk.buffer).toBe(a.chunk.buffer);
    expect(pool.idle).toBe(0);
    const large = second.carve(101);
    expect(large.source).toBeNull();
    expect(large.chunk.length).toBe(101);
    const alone = new ChunkCarver().carve(10);
    expect(alone.source).toBeNull();
  });
});
