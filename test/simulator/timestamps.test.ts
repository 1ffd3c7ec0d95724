import { describe, expect, test } from 'vitest';
import { ceilMicros, createChangeClock, formatTimestamp, parseDate, parseTimestamp } from '../../src/simulator/timestamps.js';

describe('simulator timestamps', () => {
  test('format renders six fractional digits in UTC or +09:00 for the same instant', () => {
    const us = Date.UTC(2025, 0, 31, 20, 5, 9) * 1000 + 123_456;
    expect(formatTimestamp(us, false)).toBe('2025-01-31T20:05:09.123456Z');
    expect(formatTimestamp(us, true)).toBe('2025-02-01T05:05:09.123456+09:00');
  });

  test('format agrees with Date for random instants, and parse inverts it', () => {
    for (let i = 0; i < 2_000; i++) {
      const ms = Math.floor(Math.random() * 4e12) - 1e12;
      const us = ms * 1000 + Math.floor(Math.random() * 1000);
      const expected = `${new Date(ms).toISOString().slice(0, 23)}${String(us - ms * 1000).padStart(3, '0')}Z`;
      expect(formatTimestamp(us, false)).toBe(expected);
      expect(parseTimestamp(formatTimestamp(us, true))?.micros).toBe(us);
    }
  });

  test('parse honours offsets, short fractions and digits below a microsecond', () => {
    const base = Date.UTC(2025, 5, 1, 0, 0, 0) * 1000;
    expect(parseTimestamp('2025-06-01T09:00:00+09:00')?.micros).toBe(base);
    expect(parseTimestamp('2025-06-01T09:00:00+0900')?.micros).toBe(base);
    expect(parseTimestamp('2025-05-31T19:00-05:00')?.micros).toBe(base);
    expect(parseTimestamp('2025-06-01T00:00:00.5Z')?.micros).toBe(base + 500_000);
    const nano = parseTimestamp('2025-06-01T00:00:00.0000011Z')!;
    expect(nano).toEqual({ micros: base + 1, truncated: true });
    expect(ceilMicros(nano)).toBe(base + 2);
    expect(parseTimestamp('2025-06-01T00:00:00')).toBeNull();
    expect(parseTimestamp('2025-02-30T00:00:00Z')).toBeNull();
    expect(parseDate('2024-02-29')).toBe(Date.UTC(2024, 1, 29) * 1000);
    expect(parseDate('2025-02-29')).toBeNull();
  });

  test('the change clock is strictly increasing and never below its floor', () => {
    const clock = createChangeClock(() => 1_000, 5_000_000);
    const a = clock();
    const b = clock();
    expect(a).toBeGreaterThan(5_000_000);
    expect(b).toBeGreaterThan(a);
  });
});
