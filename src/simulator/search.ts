import type { FieldError } from './errors.js';
import { fieldError, validationError } from './errors.js';
import type { StoredRecord } from './record-store.js';
import type { SalesData } from './sales-data.js';
import type { PropertyType } from './schema.js';
import { MICROS_PER_DAY, parseDate, parseTimestamp } from './timestamps.js';
import type { RecordResource } from './types.js';
import type { StoredValue } from './values.js';

/**
 * POST /v1/<resource>/search/: filter groups (OR of ANDs), multi-field sort and page-number paging, with the
 * spec's operator table per property type. Every violation is a 400 validation_error naming the offending member.
 */

export const SEARCH_DEFAULT_PAGE_SIZE = 100;
export const SEARCH_MAX_WINDOW = 10_000;
export const MAX_FILTER_GROUPS = 10;

type OperatorKind = 'single' | 'range' | 'multiple' | 'none';

const OPERATOR_KIND: Record<string, OperatorKind> = {
  contains: 'single',
  not_contains: 'single',
  equals: 'single',
  not_equals: 'single',
  eq: 'single',
  ne: 'single',
  gt: 'single',
  gte: 'single',
  lt: 'single',
  lte: 'single',
  date_eq: 'single',
  date_ne: 'single',
  date_after: 'single',
  date_before: 'single',
  date_on_or_before: 'single',
  date_on_or_after: 'single',
  range: 'range',
  date_range: 'range',
  in: 'multiple',
  not_in: 'multiple',
  is_null: 'none',
  is_not_null: 'none',
  is_empty: 'none',
  is_not_empty: 'none',
};

const DATE_OPS = [
  'date_eq',
  'date_ne',
  'date_after',
  'date_before',
  'date_on_or_before',
  'date_on_or_after',
  'date_range',
  'is_null',
  'is_not_null',
];

/** The spec's table; `multi_select` (a type the spec does not name) behaves like select with membership tests. */
export const OPERATORS_BY_TYPE: Record<PropertyType, readonly string[]> = {
  text: ['contains', 'not_contains', 'equals', 'not_equals', 'is_empty', 'is_not_empty'],
  number: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'range', 'is_null', 'is_not_null'],
  date: DATE_OPS,
  datetime: DATE_OPS,
  select: ['equals', 'not_equals', 'in', 'not_in', 'is_null', 'is_not_null'],
  multi_select: ['equals', 'not_equals', 'in', 'not_in', 'is_null', 'is_not_null'],
  boolean: ['eq', 'ne', 'is_null', 'is_not_null'],
};

interface SearchField {
  type: PropertyType;
  get(record: StoredRecord): StoredValue | undefined;
}

type Predicate = (record: StoredRecord) => boolean;

export interface SearchResult {
  page: StoredRecord[];
  hasMore: boolean;
  pageNumber: number;
}

function resolveField(data: SalesData, resource: RecordResource, name: string): SearchField | 'unknown' | 'not_searchable' {
  if (name === 'id') return { type: 'text', get: (r) => r.id };
  if (name === 'created_at') return { type: 'datetime', get: (r) => r.createdAt };
  if (name === 'updated_at') return { type: 'datetime', get: (r) => r.updatedAt };
  if (resource === 'contacts' && name === 'account.name') {
    return {
      type: 'text',
      get: (r) => {
        const accountId = r.values['account_id'];
        return typeof accountId === 'string' ? data.visibleGet('companies', accountId)?.values['name'] : undefined;
      },
    };
  }
  const spec = data.schemas[resource].get(name);
  if (!spec) return 'unknown';
  // Contact search supports only core fields and account.name.
  if (resource === 'contacts' && !spec.def.is_core) return 'not_searchable';
  return { type: spec.type, get: (r) => r.values[name] };
}

/** [start, end] in µs of a date or datetime value; a date covers its whole (UTC) day. */
function interval(type: PropertyType, value: StoredValue | undefined): [number, number] | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'number') return [value, value];
  if (typeof value !== 'string') return null;
  if (type === 'date' || /^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const day = parseDate(value);
    return day === null ? null : [day, day + MICROS_PER_DAY - 1];
  }
  const parsed = parseTimestamp(value);
  return parsed ? [parsed.micros, parsed.micros] : null;
}

function parseDateOperand(value: unknown): [number, number] | null {
  if (typeof value !== 'string') return null;
  return interval(/^\d{4}-\d{2}-\d{2}$/.test(value) ? 'date' : 'datetime', value);
}

function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function compileCondition(field: SearchField, operator: string, value: unknown, path: string, errors: FieldError[]): Predicate | null {
  const bad = (code: 'invalid_type' | 'invalid_value', message: string): null => {
    errors.push(fieldError(`${path}.value`, code, message));
    return null;
  };
  const get = field.get;
  const isNull = (r: StoredRecord): boolean => {
    const v = get(r);
    return v === undefined || v === null;
  };
  switch (field.type) {
    case 'text': {
      if (operator === 'is_empty') return (r) => isNull(r) || get(r) === '';
      if (operator === 'is_not_empty') return (r) => !isNull(r) && get(r) !== '';
      const q = String(value).toLowerCase();
      const text = (r: StoredRecord): string | null => {
        const v = get(r);
        return v === undefined || v === null ? null : String(v).toLowerCase();
      };
      if (operator === 'contains') return (r) => text(r)?.includes(q) ?? false;
      if (operator === 'not_contains') return (r) => !(text(r)?.includes(q) ?? false);
      if (operator === 'equals') return (r) => text(r) === q;
      return (r) => text(r) !== q; // not_equals
    }
    case 'number': {
      if (operator === 'is_null') return isNull;
      if (operator === 'is_not_null') return (r) => !isNull(r);
      const toNumber = (v: unknown): number | null => {
        const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
        return Number.isFinite(n) ? n : null;
      };
      const num = (r: StoredRecord): number | null => {
        const v = get(r);
        return typeof v === 'number' ? v : null;
      };
      if (operator === 'range') {
        const [a, b] = (value as unknown[]).map(toNumber);
        if (a === null || b === null || a === undefined || b === undefined) return bad('invalid_type', '数値の範囲を指定してください。');
        return (r) => {
          const x = num(r);
          return x !== null && x >= a && x <= b;
        };
      }
      const n = toNumber(value);
      if (n === null) return bad('invalid_type', '数値を指定してください。');
      const cmp: Record<string, (x: number) => boolean> = {
        eq: (x) => x === n,
        ne: (x) => x !== n,
        gt: (x) => x > n,
        gte: (x) => x >= n,
        lt: (x) => x < n,
        lte: (x) => x <= n,
      };
      const test = cmp[operator] as (x: number) => boolean;
      if (operator === 'ne') return (r) => num(r) === null || test(num(r) as number);
      return (r) => {
        const x = num(r);
        return x !== null && test(x);
      };
    }
    case 'date':
    case 'datetime': {
      if (operator === 'is_null') return isNull;
      if (operator === 'is_not_null') return (r) => !isNull(r);
      const own = (r: StoredRecord): [number, number] | null => interval(field.type, get(r));
      if (operator === 'date_range') {
        const [from, to] = (value as unknown[]).map(parseDateOperand);
        if (!from || !to) return bad('invalid_value', '日付または日時の範囲を指定してください。');
        return (r) => {
          const p = own(r);
          return p !== null && p[1] >= from[0] && p[0] <= to[1];
        };
      }
      const v = parseDateOperand(value);
      if (!v) return bad('invalid_value', '日付 (YYYY-MM-DD) または日時 (ISO 8601) を指定してください。');
      const [lo, hi] = v;
      const tests: Record<string, (p: [number, number]) => boolean> = {
        date_eq: (p) => p[0] <= hi && p[1] >= lo,
        date_after: (p) => p[0] > hi,
        date_before: (p) => p[1] < lo,
        date_on_or_after: (p) => p[1] >= lo,
        date_on_or_before: (p) => p[0] <= hi,
      };
      if (operator === 'date_ne')
        return (r) => {
          const p = own(r);
          return p === null || !(tests['date_eq'] as (p: [number, number]) => boolean)(p);
        };
      const test = tests[operator] as (p: [number, number]) => boolean;
      return (r) => {
        const p = own(r);
        return p !== null && test(p);
      };
    }
    case 'select':
    case 'multi_select': {
      if (operator === 'is_null') return (r) => isNull(r) || (field.type === 'multi_select' && get(r) === '');
      if (operator === 'is_not_null') return (r) => !isNull(r) && !(field.type === 'multi_select' && get(r) === '');
      const members = (r: StoredRecord): string[] => {
        const v = get(r);
        if (v === undefined || v === null) return [];
        return field.type === 'multi_select' ? String(v).split(';') : [String(v)];
      };
      if (operator === 'in' || operator === 'not_in') {
        const wanted = new Set((value as unknown[]).map(String));
        const hit = (r: StoredRecord): boolean => members(r).some((m) => wanted.has(m));
        return operator === 'in' ? hit : (r) => !hit(r);
      }
      const wanted = String(value);
      const hit = (r: StoredRecord): boolean => members(r).includes(wanted);
      return operator === 'equals' ? hit : (r) => !hit(r);
    }
    case 'boolean': {
      if (operator === 'is_null') return isNull;
      if (operator === 'is_not_null') return (r) => !isNull(r);
      const b = value === true || value === 'true' ? true : value === false || value === 'false' ? false : null;
      if (b === null) return bad('invalid_type', '真偽値を指定してください。');
      return operator === 'eq' ? (r) => get(r) === b : (r) => get(r) !== b;
    }
  }
}

function checkValueShape(kind: OperatorKind, value: unknown, path: string, errors: FieldError[]): boolean {
  const name = `${path}.value`;
  switch (kind) {
    case 'none':
      if (value !== undefined && value !== null) {
        errors.push(fieldError(name, 'invalid_value', 'この演算子には値を指定しないでください。'));
        return false;
      }
      return true;
    case 'single':
      if (value === undefined || value === null) {
        errors.push(fieldError(name, 'required'));
        return false;
      }
      if (!isScalar(value)) {
        errors.push(fieldError(name, 'invalid_type', '文字列、数値または真偽値を指定してください。'));
        return false;
      }
      return true;
    case 'range':
      if (!Array.isArray(value) || value.length !== 2 || !value.every(isScalar)) {
        errors.push(fieldError(name, 'invalid_type', '[from, to] の2要素の配列を指定してください。'));
        return false;
      }
      return true;
    case 'multiple':
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' || typeof v === 'number')) {
        errors.push(fieldError(name, 'invalid_type', '文字列または数値の配列を指定してください。'));
        return false;
      }
      return true;
  }
}

function compareValues(a: StoredValue | undefined, b: StoredValue | undefined): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function runSearch(data: SalesData, resource: RecordResource, rawBody: unknown): SearchResult {
  const errors: FieldError[] = [];
  const body = (rawBody ?? {}) as Record<string, unknown>;
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw validationError([fieldError('body', 'invalid_type', 'JSON オブジェクトを指定してください。')]);
  }

  const page = body['page'] ?? 1;
  const pageSize = body['page_size'] ?? SEARCH_DEFAULT_PAGE_SIZE;
  if (typeof page !== 'number' || !Number.isInteger(page)) errors.push(fieldError('page', 'invalid_type', '整数を指定してください。'));
  else if (page < 1) errors.push(fieldError('page', 'out_of_range', '1 以上を指定してください。'));
  if (typeof pageSize !== 'number' || !Number.isInteger(pageSize)) {
    errors.push(fieldError('page_size', 'invalid_type', '整数を指定してください。'));
  } else if (pageSize < 1 || pageSize > 200) errors.push(fieldError('page_size', 'out_of_range', '1 から 200 の範囲で指定してください。'));
  if (errors.length === 0 && (page as number) * (pageSize as number) > SEARCH_MAX_WINDOW) {
    errors.push(fieldError('page', 'out_of_range', 'page × page_size は 10000 以下にしてください。'));
  }

  const groups: Predicate[][] = [];
  const rawGroups = body['filter_groups'] ?? [];
  if (!Array.isArray(rawGroups)) {
    errors.push(fieldError('filter_groups', 'invalid_type', '配列を指定してください。'));
  } else if (rawGroups.length > MAX_FILTER_GROUPS) {
    errors.push(fieldError('filter_groups', 'out_of_range', 'filter_groups は 10 個までです。'));
  } else {
    rawGroups.forEach((group: unknown, gi) => {
      const gpath = `filter_groups[${gi}]`;
      const conditions = (group as { conditions?: unknown } | null)?.conditions;
      if (!Array.isArray(conditions) || conditions.length === 0) {
        errors.push(fieldError(`${gpath}.conditions`, 'required', '条件を1つ以上指定してください。'));
        return;
      }
      const predicates: Predicate[] = [];
      conditions.forEach((condition: unknown, ci) => {
        const path = `${gpath}.conditions[${ci}]`;
        const c = (condition ?? {}) as { field?: unknown; operator?: unknown; value?: unknown };
        if (typeof c.field !== 'string') {
          errors.push(fieldError(`${path}.field`, 'required'));
          return;
        }
        const field = resolveField(data, resource, c.field);
        if (field === 'unknown') {
          errors.push(fieldError(`${path}.field`, 'unknown_property'));
          return;
        }
        if (field === 'not_searchable') {
          errors.push(fieldError(`${path}.field`, 'invalid_value', '取引先責任者のカスタム項目は検索できません。'));
          return;
        }
        if (typeof c.operator !== 'string' || !OPERATORS_BY_TYPE[field.type].includes(c.operator)) {
          errors.push(fieldError(`${path}.operator`, 'invalid_value', 'この項目タイプでは使用できない演算子です。'));
          return;
        }
        const kind = OPERATOR_KIND[c.operator] as OperatorKind;
        if (!checkValueShape(kind, c.value, path, errors)) return;
        const predicate = compileCondition(field, c.operator, c.value, path, errors);
        if (predicate) predicates.push(predicate);
      });
      groups.push(predicates);
    });
  }

  const sortBy = body['sort_by'] ?? [];
  const sortOrder = body['sort_order'] ?? (Array.isArray(sortBy) ? sortBy.map(() => 'asc') : []);
  const sorters: Array<{ field: SearchField; dir: number }> = [];
  if (!Array.isArray(sortBy) || !sortBy.every((s) => typeof s === 'string')) {
    errors.push(fieldError('sort_by', 'invalid_type', '文字列の配列を指定してください。'));
  } else if (!Array.isArray(sortOrder) || sortOrder.length !== sortBy.length) {
    errors.push(fieldError('sort_order', 'invalid_value', 'sort_by と同じ長さの配列を指定してください。'));
  } else {
    sortBy.forEach((name: string, i) => {
      const field = resolveField(data, resource, name);
      const order = sortOrder[i];
      if (field === 'unknown') errors.push(fieldError(`sort_by[${i}]`, 'unknown_property'));
      else if (field === 'not_searchable') {
        errors.push(fieldError(`sort_by[${i}]`, 'invalid_value', '取引先責任者のカスタム項目は並べ替えに使用できません。'));
      } else if (order !== 'asc' && order !== 'desc') {
        errors.push(fieldError(`sort_order[${i}]`, 'invalid_value', 'asc または desc を指定してください。'));
      } else sorters.push({ field, dir: order === 'asc' ? 1 : -1 });
    });
  }

  if (errors.length > 0) throw validationError(errors);

  const matches = (r: StoredRecord): boolean => groups.length === 0 || groups.some((g) => g.every((p) => p(r)));
  const hits: StoredRecord[] = [];
  // Searches see what readers see: versions still waiting out the commit lag are not there yet.
  for (const record of data.visibleValues(resource)) if (matches(record)) hits.push(record);
  // Default order (the spec leaves it open): id ascending, which also breaks every tie.
  hits.sort((a, b) => {
    for (const { field, dir } of sorters) {
      const x = field.get(a);
      const y = field.get(b);
      const xNull = x === undefined || x === null;
      const yNull = y === undefined || y === null;
      if (xNull || yNull) {
        if (xNull && yNull) continue;
        return xNull ? 1 : -1; // nulls last in both directions
      }
      const c = compareValues(x, y);
      if (c !== 0) return c * dir;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
  const p = page as number;
  const size = pageSize as number;
  const offset = (p - 1) * size;
  return { page: hits.slice(offset, offset + size), hasMore: hits.length > offset + size, pageNumber: p };
}
