import { describe, expect, it } from 'vitest';
import { canonicalInstant, daysFromCivil, microsToIso, parseDateDays, parseInstantMicros } from '../../src/core/time.js';

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

  it('reads exactly YYYY-MM-DD of a real date: no other shape, no other digits, no padding', () => {
    expect(parseDateDays('2026-01-31')).toBe(daysFromCivil(2026, 1, 31));
    expect(parseDateDays('2000-02-29')).toBe(daysFromCivil(2000, 2, 29));
    expect(parseDateDays('0001-01-01')).toBe(daysFromCivil(1, 1, 1));
    // Year 0 is ISO 8601's 1 BC, which DuckDB holds as 0001-01-01 (BC).
    expect(parseDateDays('0000-01-01')).toBe(daysFromCivil(0, 1, 1));
    expect(parseDateDays('9999-12-31')).toBe(daysFromCivil(9999, 12, 31));
    expect(parseDateDays('1969-12-31')).toBe(-1);
    for (const text of ['1900-02-29', '2026-00-10', '2026-13-01', '2026-04-31', '2026-1-01', '2026-01-1', '2026/01/01']) {
      expect(parseDateDays(text), text).toBeNull();
    }
    for (const text of [
      ' 2026-01-01',
      '2026-01-01 ',
      '2026-01-01\n',
      '+2026-01-01',
      '2026-01-0a',
      '２０２６-01-01',
      '2026-01-01T00:00:00Z',
      '',
    ]) {
      expect(parseDateDays(text), JSON.stringify(text)).toBeNull();
    }
  });
});

/** Integers below `n`, the same ones for the same seed, so a failure replays. */
function seededRandom(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return Math.floor((state / 2 ** 32) * n);
  };
}
const pad = (n: number, w = 2) => String(n).padStart(w, '0');
/** `.` and one to nine digits. */
const fractionOf = (random: (n: number) => number) =>
  '.' +
  String(random(1e9))
    .padStart(9, '0')
    .slice(0, 1 + random(9));

describe('canonicalInstant', () => {
  it('agrees with the exact bigint path on every shape of input (offsets, precision, edge years)', () => {
    const random = seededRandom(12345);
    const samples = [
      '0001-01-01T00:00:00Z',
      '0999-12-31T23:59:59.9999999-01:00',
      '1000-01-01T00:30:00+01:00',
      '9999-12-31T23:59:59.999999-09:00',
      '2024-02-29T23:59:59,5+0930',
      '2024-03-01 00:00z',
      '2024-13-01T00:00:00Z',
      '2023-02-29T00:00:00Z',
      '2024-01-01T24:00:00Z',
      '2024-01-01T00:00:00+24:00',
    ];
    for (let i = 0; i < 2000; i++) {
      const frac = ['', fractionOf(random)][random(2)];
      const offset = ['Z', '', `+${pad(random(15))}:${pad(random(60))}`, `-${pad(random(13))}${pad(random(60))}`, `+${pad(random(15))}`][
        random(5)
      ];
      samples.push(
        `${pad(1 + random(9999), 4)}-${pad(1 + random(12))}-${pad(1 + random(31))}T${pad(random(24))}:${pad(random(60))}:${pad(random(60))}${frac}${offset}`,
      );
    }
    for (const text of samples) {
      const micros = parseInstantMicros(text);
      expect(canonicalInstant(text), text).toBe(micros === null ? null : microsToIso(micros));
    }
  });

  it("reads the service's fixed forms by position exactly as the pattern reads them, out-of-range fields and near misses included", () => {
    const random = seededRandom(777);
    const texts = ['2024-02-29T23:59:59.123456789+23:59', '2024-02-30T00:00:00Z', '2024-01-01T00:00:60Z', '0000-01-01T00:00:00Z'];
    for (let i = 0; i < 5000; i++) {
      const frac = ['', '.', fractionOf(random)][random(3)];
      const offset = ['Z', `+${pad(random(26))}:${pad(random(61))}`, `-${pad(random(26))}:${pad(random(61))}`, '+09:0', 'Z ', '', '+0900'][
        random(7)
      ];
      const year = [0, 1, 999, 1000, 1969, 2024, 9999, random(10_000)][random(8)]!;
      texts.push(
        `${pad(year, 4)}-${pad(random(14))}-${pad(random(33))}T${pad(random(26))}:${pad(random(61))}:${pad(random(62))}${frac}${offset}`,
      );
    }
    for (const text of texts) {
      // A lower-case `t` is the same instant to the pattern, and never read by position.
      const byPattern = text.replace('T', 't');
      expect(canonicalInstant(text), text).toBe(canonicalInstant(byPattern));
      expect(parseInstantMicros(text), text).toBe(parseInstantMicros(byPattern));
    }
  });

  it('reads instants in year 0 and past 9999, as an offset can put a date-time in UTC, and writes what it reads back', () => {
    expect(canonicalInstant('0001-01-01T00:00:00+09:00')).toBe('0000-12-31T15:00:00.000000Z');
    expect(canonicalInstant('9999-12-31T23:00-09:00')).toBe('10000-01-01T08:00:00.000000Z');
    for (const text of ['0000-12-31T15:00:00.000000Z', '10000-01-01T08:00:00.000000Z']) expect(canonicalInstant(text)).toBe(text);
  });

  it('returns a canonical instant unchanged', () => {
    expect(canonicalInstant('2025-06-01T00:00:00.123456Z')).toBe('2025-06-01T00:00:00.123456Z');
  });
});
