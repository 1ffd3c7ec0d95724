import { describe, expect, it } from 'vitest';
import { canonicalInstant, microsToIso, parseDateDays, parseInstantMicros } from '../../src/core/time.js';

describe('parseInstantMicros', () => {
  it('honours offsets and keeps microseconds', () => {
    // 2026-01-01T18:04:05.123456Z
    expect(parseInstantMicros('2026-01-02T03:04:05.123456+09:00')).toBe(1767290645123456n);
    expect(parseInstantMicros('2026-01-01T18:04:05.123456Z')).toBe(1767290645123456n);
    expect(parseInstantMicros('2026-01-01T13:04:05.123456-0500')).toBe(1767290645123456n);
  });

  it('reads fewer digits as a fraction and truncates digits beyond microseconds', () => {
    expect(parseInstantMicros('1970-01-01T00:00:00.5Z')).toBe(500000n);
    expect(parseInstantMicros('1970-01-01T00:00:00.1234569Z')).toBe(123456n);
  });

  it('reads an instant without offset as UTC, and before 1970 as negative', () => {
    expect(parseInstantMicros('1970-01-01T00:00:01')).toBe(1000000n);
    expect(parseInstantMicros('1969-12-31T23:59:59.999999Z')).toBe(-1n);
  });

  it('rejects what is not a valid instant', () => {
    for (const text of ['', 'tomorrow', '2026-02-30T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01', '2026-01-01T00:00:00+25:00']) {
      expect(parseInstantMicros(text), text).toBeNull();
    }
  });
});

describe('microsToIso', () => {
  it('writes UTC with six fractional digits and round-trips', () => {
    expect(microsToIso(1767290645123456n)).toBe('2026-01-01T18:04:05.123456Z');
    expect(microsToIso(-1n)).toBe('1969-12-31T23:59:59.999999Z');
    expect(canonicalInstant('2024-02-29T23:59:59+09:00')).toBe('2024-02-29T14:59:59.000000Z');
  });
});

describe('parseDateDays', () => {
  it('accepts calendar dates only', () => {
    expect(parseDateDays('1970-01-02')).toBe(1);
    expect(parseDateDays('2024-02-29')).not.toBeNull();
    expect(parseDateDays('2023-02-29')).toBeNull();
  });
});
