/**
 * The format of `updated_after`, which the spec leaves unshown ("timestamp"): sent as given (a watermark carries
 * microseconds) until the service refuses it, then floored to fewer fraction digits, so that no record is left out.
 */
import { floorFraction } from '../core/time.js';
import { SalesApiError } from './errors.js';

/** Fraction-of-second digits `updated_after` is sent with: 6, as given. */
export type FractionDigits = 0 | 3 | 6;

/** `updatedAfter` as sent with `digits` fraction digits (6: as given). */
export function updatedAfterWith(updatedAfter: string, digits: FractionDigits): string {
  return digits === 6 ? updatedAfter : floorFraction(updatedAfter, digits);
}

/**
 * After a list request sent `sent` failed with `error`: the fewer fraction digits to send `updated_after` with, when
 * the service may have refused its format, else null. Such a refusal is a 400 naming `updated_after` among its
 * fields (as it is, or as a path ending in it: the spec fixes field paths only for properties), or, on a first page
 * (no cursor to refuse), a 400 naming none. Each step changes what is sent.
 */
export function fewerDigits(
  error: unknown,
  sent: { updatedAfter?: string | null | undefined; after?: string | null | undefined },
  digits: FractionDigits,
): FractionDigits | null {
  if (!(error instanceof SalesApiError) || error.status !== 400 || !sent.updatedAfter) return null;
  const named = error.fields.some((field) => /(^|\.)updated_after$/.test(field.name));
  if (!named && (Boolean(sent.after) || error.fields.length > 0)) return null;
  const now = updatedAfterWith(sent.updatedAfter, digits);
  for (const next of [3, 0] as const) if (next < digits && updatedAfterWith(sent.updatedAfter, next) !== now) return next;
  return null;
}
