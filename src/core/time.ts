/**
 * Service timestamps are ISO 8601 strings that may carry an offset and microseconds. A JS Date keeps only
 * milliseconds, so instants are compared as epoch microseconds (bigint) parsed from the string itself.
 */
const ISO = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

/** Epoch microseconds of an ISO 8601 date-time, or null when it is not one. A missing offset means UTC. */
export function isoToEpochMicros(iso: string): bigint | null {
  const m = ISO.exec(iso.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s = '0', frac = '', zone = 'Z'] = m;
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (Number.isNaN(ms)) return null;
  const micros = BigInt((frac + '000000').slice(0, 6));
  let offsetMinutes = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    offsetMinutes = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0'));
  }
  return BigInt(ms - offsetMinutes * 60_000) * 1000n + micros;
}

/** ISO 8601 in UTC with six fractional digits. */
export function epochMicrosToIso(micros: bigint): string {
  const ms = micros / 1000n;
  const sub = micros % 1000n;
  const base = new Date(Number(ms)).toISOString(); // ...sssZ
  return `${base.slice(0, -1)}${sub.toString().padStart(3, '0')}Z`;
}

/** True when both strings name the same instant (offsets and precision aside). */
export function sameInstant(a: string, b: string): boolean {
  const x = isoToEpochMicros(a);
  return x !== null && x === isoToEpochMicros(b);
}

/** `iso` moved back by `ms` milliseconds, as ISO 8601 UTC; microseconds are kept. */
export function minusMs(iso: string, ms: number): string {
  const micros = isoToEpochMicros(iso);
  if (micros === null) throw new Error(`not an ISO 8601 date-time: ${iso}`);
  return epochMicrosToIso(micros - BigInt(Math.round(ms)) * 1000n);
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
