import { describe, expect, it } from 'vitest';
import { writerThreads } from '../../src/warehouse/duckdb-threads.js';

describe('writerThreads', () => {
  it("leaves one core to the sync's own JS, and never goes below one thread", () => {
    expect(writerThreads(1)).toBe(1);
    expect(writerThreads(2)).toBe(1);
    expect(writerThreads(8)).toBe(7);
  });
});
