import type { FieldError } from './errors.js';
import { fieldError } from './errors.js';
import type { FieldSpec, PropertyType } from './schema.js';
import { formatDate, formatTimestamp, parseDate, parseTimestamp } from './timestamps.js';
import type { PropertyValue } from './types.js';

/**
 * How property values live inside the simulator and how they cross the wire.
 * Stored forms: text/select/multi_select/date → string, number → number, boolean → boolean,
 * datetime → microseconds (number), cleared → null. A key that is absent means "no stored value".
 */
export type StoredValue = string | number | boolean | null;

export const TEXT_MAX_LENGTH = 65_535;
const NUMBER_LIMIT = 1e15;
const RECORD_ID_RE = /^[A-Za-z0-9]{18}$/;

export function isRecordId(value: string): boolean {
  return RECORD_ID_RE.test(value);
}

export function renderValue(type: PropertyType, value: StoredValue | undefined, jst: boolean): PropertyValue {
  if (value === undefined || value === null) return null;
  if (type === 'datetime' && typeof value === 'number') return formatTimestamp(value, jst);
  return value;
}

export function sameValue(a: StoredValue | undefined, b: StoredValue | undefined): boolean {
  return (a ?? null) === (b ?? null);
}

/**
 * Checks one incoming value against its definition and returns the stored form, or a field error.
 * `exists` answers whether a link target exists.
 */
export function normalizeValue(
  spec: FieldSpec,
  raw: unknown,
  exists: (target: NonNullable<FieldSpec['linkTarget']>, id: string) => boolean,
): { value: StoredValue } | { error: FieldError } {
  const name = `properties.${spec.def.api_name}`;
  if (raw === null) return { value: null };
  switch (spec.type) {
    case 'text': {
      if (typeof raw !== 'string') return { error: fieldError(name, 'invalid_type', '文字列を指定してください。') };
      if (raw.length > TEXT_MAX_LENGTH) return { error: fieldError(name, 'too_long') };
      if (spec.role === 'link' && spec.linkTarget) {
        if (!isRecordId(raw)) return { error: fieldError(name, 'invalid_value', 'レコードIDの形式が正しくありません。') };
        if (!exists(spec.linkTarget, raw)) return { error: fieldError(name, 'not_found') };
      }
      return { value: raw };
    }
    case 'number': {
      if (typeof raw !== 'number' || !Number.isFinite(raw)) {
        return { error: fieldError(name, 'invalid_type', '数値を指定してください。') };
      }
      if (Math.abs(raw) >= NUMBER_LIMIT) return { error: fieldError(name, 'out_of_range') };
      return { value: raw };
    }
    case 'boolean':
      if (typeof raw !== 'boolean') return { error: fieldError(name, 'invalid_type', '真偽値を指定してください。') };
      return { value: raw };
    case 'date': {
      if (typeof raw !== 'string') return { error: fieldError(name, 'invalid_type', '日付を文字列で指定してください。') };
      if (parseDate(raw) === null) {
        return { error: fieldError(name, 'invalid_value', '日付は YYYY-MM-DD 形式で指定してください。') };
      }
      return { value: raw };
    }
    case 'datetime': {
      if (typeof raw !== 'string') return { error: fieldError(name, 'invalid_type', '日時を文字列で指定してください。') };
      const parsed = parseTimestamp(raw);
      if (!parsed) return { error: fieldError(name, 'invalid_value', '日時は ISO 8601 形式で指定してください。') };
      return { value: parsed.micros };
    }
    case 'select': {
      if (typeof raw !== 'string') return { error: fieldError(name, 'invalid_type', '文字列を指定してください。') };
      if (!spec.def.options.some((o) => o.value === raw)) {
        return { error: fieldError(name, 'invalid_value', '選択肢にない値です。') };
      }
      return { value: raw };
    }
    case 'multi_select': {
      if (typeof raw !== 'string') return { error: fieldError(name, 'invalid_type', '文字列を指定してください。') };
      if (raw === '') return { value: raw };
      const allowed = new Set(spec.def.options.map((o) => o.value));
      if (!raw.split(';').every((part) => allowed.has(part))) {
        return { error: fieldError(name, 'invalid_value', '選択肢にない値が含まれています。') };
      }
      return { value: raw };
    }
  }
}

/** Converts a stored value when a property changes type; null when it cannot be represented. */
export function convertValue(value: StoredValue, from: PropertyType, to: PropertyType): StoredValue {
  if (value === null) return null;
  const asText = from === 'datetime' && typeof value === 'number' ? formatTimestamp(value, false) : String(value);
  switch (to) {
    case 'text':
    case 'select':
    case 'multi_select':
      return asText;
    case 'number': {
      const n = typeof value === 'number' && from === 'number' ? value : Number(asText);
      return asText.trim() !== '' && Number.isFinite(n) ? n : null;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      return asText === 'true' ? true : asText === 'false' ? false : null;
    case 'date': {
      if (from === 'datetime' && typeof value === 'number') return formatDate(value);
      return parseDate(asText) !== null ? asText : null;
    }
    case 'datetime': {
      if (from === 'date') {
        const day = parseDate(asText);
        return day;
      }
      return parseTimestamp(asText)?.micros ?? null;
    }
  }
}
