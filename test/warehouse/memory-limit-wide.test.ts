/**
 * Past a thousand property columns a checkpoint needs more memory than a commit: the automatic limit grows faster
 * there (bench:wide --org 2000: a 2,007-column table's checkpoint failed at 96 + 1 MB per column, held at 2250MB).
 */
import { describe, expect, it } from 'vitest';
import { automaticMemoryLimit } from '../../src/warehouse/memory-limit.js';

describe('automaticMemoryLimit for very wide tables', () => {
  it('is 17/16 MB per column up to a thousand columns', () => {
    expect(automaticMemoryLimit(1000)).toBe('1127MB');
  });

  it('adds a quarter MB per column past a thousand, so a 2,000-property table gets more than its checkpoint needs', () => {
    expect(automaticMemoryLimit(1004)).toBe('1132MB');
    expect(automaticMemoryLimit(2007)).toBe('2449MB');
  });
});
