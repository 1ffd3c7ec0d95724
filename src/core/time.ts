/**
 * Instants at full precision. The service's timestamps may carry offsets and microseconds; a JS `Date` keeps
 * neither the offset nor the sub-millisecond digits, so instants are epoch microseconds in a bigint.
 */

const INSTANT = /^(\d{4,6})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/;

const MICROS_PER_SECOND = 1_000_000n;
const SECONDS_PER_DAY = 86_400n;

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** Days of each month (1–12) in a common year: a table, where a literal list per call was an allocation per instant. */
const MONTH_DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return MONTH_DAYS[month]!;
}

/** Year 0 is ISO 8601's 1 BC (proleptic Gregorian), which DuckDB holds too. */
function validDate(year: number, month: number, day: number): boolean {
  return year >= 0 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

const digit = (text: string, i: number): number => text.charCodeAt(i) - 48;
const twoDigits = (text: string, i: number): number => digit(text, i) * 10 + digit(text, i + 1);
/** Where `YYYY-MM-DDTHH:MM:SS` has its digits. */
const FIELD_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];

/** An ISO 8601 date-time's fields (`seconds` of the day, `fraction` six digits), as `matchInstant` reads them. */
interface InstantFields {
  year: number;
  month: number;
  day: number;
  seconds: number;
  fraction: string;
  offsetMinutes: number;
  zulu: boolean;
  fracDigits: number;
}

const isDigitCode = (code: number): boolean => code >= 48 && code <= 57;

/**
 * The fields of `YYYY-MM-DDTHH:MM:SS`, an optional `.` and digits, then `Z` or `±HH:MM` (the service's own forms),
 * read by position; null for any other text or an out-of-range field, which the pattern then reads (and
 * rejects). Up to two a record: the pattern's match allocated a dozen strings each time.
 */
function fixedFormInstant(text: string): InstantFields | null {
  const n = text.length;
  if (n < 20 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 84) return null;
  if (text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return null;
  for (const i of FIELD_DIGITS) if (!isDigitCode(text.charCodeAt(i))) return null;
  let end = 19;
  let fraction = '000000';
  if (text.charCodeAt(19) === 46) {
    end = 20;
    while (end < n && isDigitCode(text.charCodeAt(end))) end += 1;
    if (end === 20) return null;
    fraction = end - 20 >= 6 ? text.slice(20, 26) : text.slice(20, end).padEnd(6, '0');
  }
  const mark = text.charCodeAt(end);
  let offsetMinutes = 0;
  if (mark === 90) {
    if (end + 1 !== n) return null;
  } else if (mark === 43 || mark === 45) {
    if (end + 6 !== n || text.charCodeAt(end + 3) !== 58) return null;
    const digits =
      isDigitCode(text.charCodeAt(end + 1)) &&
      isDigitCode(text.charCodeAt(end + 2)) &&
      isDigitCode(text.charCodeAt(end + 4)) &&
      isDigitCode(text.charCodeAt(end + 5));
    if (!digits) return null;
    const oh = twoDigits(text, end + 1);
    const om = twoDigits(text, end + 4);
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (mark === 45 ? -1 : 1) * (oh * 60 + om);
  } else {
    return null;
  }
  // Fields as scalars, not tuples: up to four instants a record come through here.
  const year = twoDigits(text, 0) * 100 + twoDigits(text, 2);
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  const second = twoDigits(text, 17);
  if (!inRange(year, month, day, hour, minute, second)) return null;
  const fracDigits = end === 19 ? 0 : end - 20;
  return { year, month, day, seconds: hour * 3600 + minute * 60 + second, fraction, offsetMinutes, zulu: mark === 90, fracDigits };
}

/** Whether a date and a time of day are in range (a leap second is not). */
function inRange(year: number, month: number, day: number, hour: number, minute: number, second: number): boolean {
  return validDate(year, month, day) && hour <= 23 && minute <= 59 && second <= 59;
}

/** The fields of an ISO 8601 date-time, validated; null when the text is not one. No offset means UTC. */
function matchInstant(text: string): InstantFields | null {
  const fixed = fixedFormInstant(text);
  if (fixed) return fixed;
  const m = INSTANT.exec(text);
  if (!m) return null;
  const [, ys, mos, ds, hs, mis, ss, frac, zulu, sign, ohs, oms] = m;
  let offsetMinutes = 0;
  if (zulu === undefined && sign !== undefined) {
    const oh = Number(ohs);
    const om = oms === undefined ? 0 : Number(oms);
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (sign === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const fraction = (frac ?? '').slice(0, 6).padEnd(6, '0');
  const [year, month, day, hour, minute] = [ys, mos, ds, hs, mis].map(Number) as [number, number, number, number, number];
  const second = ss === undefined ? 0 : Number(ss);
  if (!inRange(year, month, day, hour, minute, second)) return null;
  return {
    year,
    month,
    day,
    seconds: hour * 3600 + minute * 60 + second,
    fraction,
    offsetMinutes,
    zulu: zulu === 'Z',
    fracDigits: frac?.length ?? 0,
  };
}

/**
 * Epoch microseconds of an ISO 8601 date-time, honouring its offset; null when it is not one.
 * Digits beyond microseconds are truncated (as DuckDB's TIMESTAMPTZ does). No offset means UTC.
 */
export function parseInstantMicros(text: string): bigint | null {
  const t = matchInstant(text);
  if (!t) return null;
  const seconds = BigInt(daysFromCivil(t.year, t.month, t.day)) * SECONDS_PER_DAY + BigInt(t.seconds - t.offsetMinutes * 60);
  return seconds * MICROS_PER_SECOND + BigInt(t.fraction);
}

/** `YYYY-MM-DDTHH:MM:SS.ffffffZ`: UTC, always six fractional digits, so equal instants give equal strings. */
export function microsToIso(micros: bigint): string {
  const floorDiv = (a: bigint, b: bigint): bigint => (a % b < 0n ? a / b - 1n : a / b);
  const totalSeconds = floorDiv(micros, MICROS_PER_SECOND);
  const fraction = micros - totalSeconds * MICROS_PER_SECOND;
  const days = floorDiv(totalSeconds, SECONDS_PER_DAY);
  const secondOfDay = Number(totalSeconds - days * SECONDS_PER_DAY);
  const { year, month, day } = civilFromDays(Number(days));
  const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
  return (
    `${pad(year, 4)}-${pad(month)}-${pad(day)}T` +
    `${pad(Math.floor(secondOfDay / 3600))}:${pad(Math.floor((secondOfDay % 3600) / 60))}:${pad(secondOfDay % 60)}` +
    `.${fraction.toString().padStart(6, '0')}Z`
  );
}

/** `00` … `99`: two-digit fields without a padStart per field. */
const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));

/** Where a canonical instant, and a `YYYY-MM-DD` date, have their digits. */
const CANONICAL_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22, 23, 24, 25];
const DATE_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9];

/**
 * Whether `text` is already canonical (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, a valid date and time): most instants a
 * sync meets are (the service's own form), and checking them by character costs a fraction of the pattern match.
 * Kept apart from `fixedFormInstant`, which builds the fields: read through it, a canonical instant took twice as long.
 */
function isCanonicalInstant(text: string): boolean {
  if (text.length !== 27 || text[4] !== '-' || text[7] !== '-' || text[10] !== 'T' || text[13] !== ':') return false;
  if (text[16] !== ':' || text[19] !== '.' || text[26] !== 'Z') return false;
  for (const i of CANONICAL_DIGITS) {
    const d = digit(text, i);
    if (d < 0 || d > 9) return false;
  }
  const year = twoDigits(text, 0) * 100 + twoDigits(text, 2);
  return (
    validDate(year, twoDigits(text, 5), twoDigits(text, 8)) &&
    twoDigits(text, 11) <= 23 &&
    twoDigits(text, 14) <= 59 &&
    twoDigits(text, 17) <= 59
  );
}

/** The canonical form of an instant (see `microsToIso`), or null when the text is not an instant. */
export function canonicalInstant(text: string): string | null {
  // Hot path of every load (a few per record): the UTC date and time come from integer arithmetic on the
  // matched fields (a Date's toISOString took two thirds of the time), the fraction stays text; years outside
  // 1000-9999 take the exact bigint path.
  if (isCanonicalInstant(text)) return text;
  const t = matchInstant(text);
  if (!t) return null;
  const shifted = t.seconds - t.offsetMinutes * 60;
  const dayShift = Math.floor(shifted / 86_400);
  const secondOfDay = shifted - dayShift * 86_400;
  const { year, month, day } = dayShift === 0 ? t : civilFromDays(daysFromCivil(t.year, t.month, t.day) + dayShift);
  if (year < 1000 || year > 9999) {
    const micros = parseInstantMicros(text);
    return micros === null ? null : microsToIso(micros);
  }
  const hour = Math.floor(secondOfDay / 3600);
  const minute = Math.floor((secondOfDay % 3600) / 60);
  return `${year}-${TWO_DIGITS[month]}-${TWO_DIGITS[day]}T${TWO_DIGITS[hour]}:${TWO_DIGITS[minute]}:${TWO_DIGITS[secondOfDay % 60]}.${t.fraction}Z`;
}

/** Days since 1970-01-01 of a strict `YYYY-MM-DD` calendar date, or null. */
export function parseDateDays(text: string): number | null {
  // Checked by character (`/^\d{4}-\d{2}-\d{2}$/`), not by a pattern: a date cell of every record goes through here.
  if (text.length !== 10 || text[4] !== '-' || text[7] !== '-') return null;
  for (const i of DATE_DIGITS) {
    const d = digit(text, i);
    if (d < 0 || d > 9) return null;
  }
  const year = twoDigits(text, 0) * 100 + twoDigits(text, 2);
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  return validDate(year, month, day) ? daysFromCivil(year, month, day) : null;
}

/** True when both strings name the same instant (offsets and precision aside). */
export function sameInstant(a: string, b: string): boolean {
  const x = parseInstantMicros(a);
  return x !== null && x === parseInstantMicros(b);
}

/** `iso` moved back by `ms` milliseconds, as ISO 8601 UTC; microseconds are kept. */
export function minusMs(iso: string, ms: number): string {
  const micros = parseInstantMicros(iso);
  if (micros === null) throw new Error(`not an ISO 8601 date-time: ${iso}`);
  return microsToIso(micros - BigInt(Math.round(ms)) * 1000n);
}

/**
 * Parses a duration such as `300`, `90s`, `5m`, `2h` or `1d` into milliseconds (a bare number is seconds).
 * Returns null when it is not one.
 */
export function parseDurationMs(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!m) return null;
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Math.round(Number(m[1]) * factor);
}

/**
 * Orders two instants (offsets and precision aside): negative, zero or positive. Canonical forms compare as text
 * (fixed width, UTC); an unreadable one sorts first, so it never raises a watermark.
 */
export function compareInstants(a: string, b: string): number {
  const x = canonicalInstant(a);
  const y = canonicalInstant(b);
  if (x === null || y === null) return x === y ? 0 : x === null ? -1 : 1;
  if (x.length === y.length) return x < y ? -1 : x > y ? 1 : 0;
  const d = (parseInstantMicros(a) ?? 0n) - (parseInstantMicros(b) ?? 0n);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/**
 * `iso` floored to `digits` (0, 3 or 6) fraction-of-second digits, canonical otherwise (`Z`; no fraction at 0): no
 * later than `iso`, for a service that reads fewer digits than we write. `iso` itself when it is unreadable.
 */
export function floorFraction(iso: string, digits: 0 | 3 | 6): string {
  const micros = parseInstantMicros(iso);
  if (micros === null) return iso;
  const unit = 10n ** BigInt(6 - digits);
  const text = microsToIso(micros - (((micros % unit) + unit) % unit));
  return digits === 6 ? text : `${text.slice(0, digits === 0 ? -8 : -4)}Z`;
}

/** The first instant after the whole second `iso` falls in (canonical), or `iso` itself when it is unreadable. */
export function nextWholeSecond(iso: string): string {
  const micros = parseInstantMicros(iso);
  if (micros === null) return iso;
  return microsToIso(micros - (((micros % 1_000_000n) + 1_000_000n) % 1_000_000n) + 1_000_000n);
}
