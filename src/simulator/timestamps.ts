/**
 * Timestamps are integers of microseconds since the Unix epoch (a double holds them exactly until year 2255).
 * The service renders them as ISO 8601 with six fractional digits, either in UTC (`Z`) or in Japan time (`+09:00`).
 */

const JST_OFFSET_MICROS = 9 * 3600 * 1_000_000;
const MICROS_PER_DAY = 86_400 * 1_000_000;

const PAD2 = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));

/** Proleptic Gregorian [year, month, day] of a day count since 1970-01-01 (H. Hinnant's civil_from_days). */
function civilFromDays(days: number): [number, number, number] {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (month <= 2 ? 1 : 0), month, day];
}

function formatDay(days: number): string {
  const [y, m, d] = civilFromDays(days);
  return `${String(y).padStart(4, '0')}-${PAD2[m]}-${PAD2[d]}`;
}

/** `YYYY-MM-DDTHH:MM:SS.ffffff` + `Z` or `+09:00` (hand-rolled: this runs for every rendered timestamp). */
export function formatTimestamp(micros: number, jst: boolean): string {
  const shifted = micros + (jst ? JST_OFFSET_MICROS : 0);
  const days = Math.floor(shifted / MICROS_PER_DAY);
  let rest = shifted - days * MICROS_PER_DAY;
  const fraction = rest % 1_000_000;
  rest = (rest - fraction) / 1_000_000;
  const second = rest % 60;
  rest = (rest - second) / 60;
  const minute = rest % 60;
  const hour = (rest - minute) / 60;
  return `${formatDay(days)}T${PAD2[hour]}:${PAD2[minute]}:${PAD2[second]}.${String(fraction).padStart(6, '0')}${jst ? '+09:00' : 'Z'}`;
}

export interface ParsedTimestamp {
  /** Microseconds, rounded down. */
  micros: number;
  /** True when digits below a microsecond were dropped. */
  truncated: boolean;
}

const TIMESTAMP_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,12}))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)$/;

/** ISO 8601 date-time with an offset (`Z`, `+09:00`, `+0900`, `+09`) and optional fraction; null when invalid. */
export function parseTimestamp(text: string): ParsedTimestamp | null {
  const m = TIMESTAMP_RE.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const dayStart = dayStartMicros(Number(y), Number(mo), Number(d));
  if (dayStart === null) return null;
  const hour = Number(h);
  const minute = Number(mi);
  const second = s === undefined ? 0 : Number(s);
  if (hour > 23 || minute > 59 || second > 59) return null;
  const digits = frac ?? '';
  const micros6 = Number((digits + '000000').slice(0, 6));
  const truncated = /[1-9]/.test(digits.slice(6));
  let offsetMinutes = 0;
  if (zone !== undefined && zone !== 'Z' && zone !== 'z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const body = zone.slice(1).replace(':', '');
    const oh = Number(body.slice(0, 2));
    const om = body.length > 2 ? Number(body.slice(2, 4)) : 0;
    if (oh > 23 || om > 59) return null;
    offsetMinutes = sign * (oh * 60 + om);
  }
  const micros = dayStart + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1_000_000 + micros6;
  return { micros, truncated };
}

/** The smallest whole microsecond at or after the parsed instant (for inclusive lower bounds). */
export function ceilMicros(parsed: ParsedTimestamp): number {
  return parsed.truncated ? parsed.micros + 1 : parsed.micros;
}

function dayStartMicros(year: number, month: number, day: number): number | null {
  if (month < 1 || month > 12 || day < 1 || day > 31) return null;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(0, 0, 0, 0);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return date.getTime() * 1000;
}

/** `YYYY-MM-DD` → microseconds at 00:00 UTC of that day; null when invalid. */
export function parseDate(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return null;
  return dayStartMicros(Number(m[1]), Number(m[2]), Number(m[3]));
}

export function formatDate(micros: number): string {
  return formatDay(Math.floor(micros / MICROS_PER_DAY));
}

export { MICROS_PER_DAY };

/**
 * The clock of changes: every call returns a distinct, strictly increasing microsecond timestamp, taken from the
 * millisecond clock with a counter supplying the microseconds, and never below `floorMicros` (the newest seeded value).
 * With `wholeSeconds`, the second it falls in instead: changes alike within a second, never going back.
 */
export function createChangeClock(nowMs: () => number, floorMicros: number, wholeSeconds = false): () => number {
  let last = floorMicros;
  let counter = 0;
  return () => {
    // Whole seconds: every change within one second shares its stamp (never one before the last).
    if (wholeSeconds) return (last = Math.max(last, Math.floor(nowMs() / 1000) * 1_000_000));
    counter = (counter + 1) % 1000;
    const candidate = Math.floor(nowMs()) * 1000 + counter;
    last = candidate > last ? candidate : last + 1;
    return last;
  };
}
