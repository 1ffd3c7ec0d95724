import { describe, expect, it } from 'vitest';
import { microsToIso, parseInstantMicros, minusMs, parseDurationMs, sameInstant } from '../../src/core/time.js';

describe('service timestamps', () => {
  it('keeps microseconds that a JS Date would drop', () => {
    expect(parseInstantMicros('2026-01-02T03:04:05.123456Z')).toBe(1767323045123456n);
  });

  it('honours offsets: +09:00 is the same instant nine hours earlier in UTC', () => {
    expect(sameInstant('2026-01-02T12:04:05.123456+09:00', '2026-01-02T03:04:05.123456Z')).toBe(true);
    expect(sameInstant('2026-01-02T03:04:05.123456-0130', '2026-01-02T04:34:05.123456Z')).toBe(true);
  });

  it('treats missing fractional digits as zero and truncates digits beyond microseconds', () => {
    expect(parseInstantMicros('2026-01-02T03:04:05Z')).toBe(1767323045000000n);
    expect(parseInstantMicros('2026-01-02T03:04:05.1234569Z')).toBe(1767323045123456n);
  });

  it('rejects strings that are not date-times', () => {
    expect(parseInstantMicros('yesterday')).toBeNull();
    expect(parseInstantMicros('2026-13-45')).toBeNull();
  });

  it('round-trips an instant through ISO with six fractional digits', () => {
    expect(microsToIso(1767323045123456n)).toBe('2026-01-02T03:04:05.123456Z');
  });

  it('moves back by a lookback without losing microseconds', () => {
    expect(minusMs('2026-01-02T03:04:05.000001Z', 300_000)).toBe('2026-01-02T02:59:05.000001Z');
  });

  it('parses durations, a bare number being seconds', () => {
    expect(parseDurationMs('300')).toBe(300_000);
    expect(parseDurationMs('5m')).toBe(300_000);
    expect(parseDurationMs('250ms')).toBe(250);
    expect(parseDurationMs('1.5h')).toBe(5_400_000);
    expect(parseDurationMs('soon')).toBeNull();
  });
});
