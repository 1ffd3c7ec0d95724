/**
 * What the service must return, as zod schemas. An answer whose envelope does not match is an error, never a write;
 * a record that does not match is a reject, kept verbatim with the reason (see validation.ts). Unknown extra members
 * of an envelope are stripped (a new field must not break a sync); a record's `properties` map is kept whole, because
 * custom properties are the organization's own data. Timestamps are validated as strings and kept as sent: a JS
 * Date would drop microseconds and offsets.
 */
import { z } from 'zod';
import { RECORD_ID_PATTERN } from '../core/resources.js';
import type { MeetingLogRecord, MeetingLogSummary, PropertyDefinition, PropertyValue, ServiceRecord, ServiceUser } from '../core/types.js';

/**
 * RFC 3339 date-time (what the spec's "date-time" means): a calendar date, `T`, a time with optional fraction of
 * any length, and an offset (`Z` or ±hh:mm; ±hhmm tolerated). The fields sit at fixed places up to the seconds;
 * the offset's at fixed places from the end.
 */
const DATE_TIME_SHAPE = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:?\d{2})$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeapYear = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);

/**
 * What a date-time string is: `instant`; `unstorable`, legal RFC 3339 that names no instant the warehouse can
 * hold (a leap second, `23:59:60`: our time code, `canonicalInstant`, has no value for it and DuckDB no
 * TIMESTAMPTZ); or `invalid`. Year 0000 is ISO 8601's 1 BC, which both hold. One regex test and digit arithmetic: it runs twice per record (a capturing
 * exec and `Number` per field took about 1 µs a timestamp, a fifth of a page's validation).
 */
export function classifyDateTime(value: string): 'instant' | 'unstorable' | 'invalid' {
  if (!DATE_TIME_SHAPE.test(value)) return 'invalid';
  const digits = (at: number, count: number): number => {
    let n = 0;
    for (let i = at; i < at + count; i++) n = n * 10 + value.charCodeAt(i) - 48;
    return n;
  };
  const year = digits(0, 4);
  const month = digits(5, 2);
  const day = digits(8, 2);
  const second = digits(17, 2);
  const last = value.charCodeAt(value.length - 1);
  // Z or z: no offset fields; `+hh:mm` has its colon third from the end; `+hhmm` has none.
  const zulu = last === 90 || last === 122;
  const colon = value.charCodeAt(value.length - 3) === 58;
  const offsetHour = zulu ? 0 : digits(value.length - (colon ? 5 : 4), 2);
  const offsetMinute = zulu ? 0 : digits(value.length - 2, 2);
  const daysInMonth = month === 2 ? (isLeapYear(year) ? 29 : 28) : DAYS_IN_MONTH[month - 1]!;
  const valid =
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth &&
    digits(11, 2) <= 23 &&
    digits(14, 2) <= 59 &&
    second <= 60 && // 60: a leap second is legal in RFC 3339
    offsetHour <= 23 &&
    offsetMinute <= 59;
  if (!valid) return 'invalid';
  return second === 60 ? 'unstorable' : 'instant';
}

/** True when `value` is an ISO 8601 / RFC 3339 date-time with an offset and in-range fields (a leap second included). */
export function isIsoDateTime(value: string): boolean {
  return classifyDateTime(value) !== 'invalid';
}

export const recordIdSchema = z.string().regex(RECORD_ID_PATTERN, 'must match ^[A-Za-z0-9]{18}$');

/** A timestamp the warehouse can store, kept as sent. */
export const dateTimeSchema = z.string().check((ctx) => {
  const kind = classifyDateTime(ctx.value);
  if (kind === 'instant') return;
  ctx.issues.push({
    code: 'custom',
    input: ctx.value,
    message:
      kind === 'invalid'
        ? 'must be an ISO 8601 date-time with an offset, e.g. 2024-05-01T09:30:00.123456+09:00'
        : `${ctx.value.length > 64 ? `${ctx.value.slice(0, 64)}…` : ctx.value} is not an instant the warehouse can store (a leap second?)`,
  });
});

/** A property value: a string, a finite number (JSON's `1e999` parses to Infinity), a boolean or null. */
function isPropertyValue(value: unknown): value is PropertyValue {
  return value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

/**
 * A record's `properties`: an object of primitive values, checked in one loop and kept as parsed. Not
 * `z.record` of a union of the four types, which took two thirds of the time a page's validation takes (it
 * parses every key and value through the union into a copy) and drops a property named `__proto__` from the copy.
 */
const propertiesSchema = z.custom<Record<string, PropertyValue>>().superRefine((properties, ctx) => {
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) {
    ctx.addIssue({ code: 'custom', message: 'must be an object of property values', input: properties });
    return;
  }
  for (const key of Object.keys(properties)) {
    const value: unknown = properties[key];
    if (!isPropertyValue(value)) {
      ctx.addIssue({ code: 'custom', path: [key], message: 'must be a string, a finite number, a boolean or null', input: value });
      return;
    }
  }
});

export const serviceRecordSchema = z.object({
  id: recordIdSchema,
  properties: propertiesSchema,
  created_at: dateTimeSchema,
  updated_at: dateTimeSchema,
});

export const summarySchema = z.object({
  summary_type: z.string(),
  result_type: z.string(),
  text: z.string().nullable(),
  selections: z.array(
    z.object({
      value: z.string(),
      level: z.number().int(),
      order: z.number().int(),
    }),
  ),
  reason: z.string(),
  status: z.string(),
  updated_at: dateTimeSchema,
});

export const meetingLogRecordSchema = serviceRecordSchema.extend({
  summaries: z.array(summarySchema),
});

export const serviceUserSchema = z.object({
  id: recordIdSchema,
  email: z.string(),
  name: z.string(),
  is_active: z.boolean(),
});

export const propertyDefinitionSchema = z.object({
  api_name: z.string().min(1),
  display_name: z.string(),
  property_type: z.string(),
  is_core: z.boolean(),
  is_required_on_create: z.boolean(),
  // Only select properties have options; the others may omit the member or send null.
  options: z
    .array(z.object({ value: z.string(), label: z.string() }))
    .nullish()
    .transform((options) => options ?? []),
});

export const pagingSchema = z.object({
  next: z.object({ after: z.string().min(1), link: z.string() }).nullable(),
});

/**
 * A list or search answer's envelope, checked strictly; its elements are only required to be there; each is checked
 * on its own against the item schema (see `checkListBody`), so one bad record does not stop the page.
 */
export const listEnvelopeSchema = z.object({ results: z.array(z.unknown()), paging: pagingSchema });

/** One answer of a property definitions listing, as `definitionsEnvelope` (validation.ts) shapes it. */
export const propertyListSchema = z.object({
  results: z.array(propertyDefinitionSchema),
  paging: pagingSchema.optional(),
});

/** The error envelope (spec: Errors). Lenient: a code we have never seen is still a code. */
export const errorEnvelopeSchema = z.object({
  error: z.object({
    code: z.string().min(1),
    message: z.string().catch(''),
    fields: z
      .array(z.object({ name: z.string(), code: z.string(), message: z.string().catch('') }))
      .optional()
      .catch(undefined),
  }),
});

export type ErrorEnvelope = z.infer<typeof errorEnvelopeSchema>;
export type FieldError = NonNullable<ErrorEnvelope['error']['fields']>[number];

/** `['results', 3, 'id']` → `results[3].id`; odd keys are quoted: `properties["a.b"]`. */
export function formatIssuePath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(segment)) {
      out += out === '' ? segment : `.${segment}`;
    } else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out === '' ? '(root)' : out;
}

/** The first issue of a failed parse as `path: message`, for one-line error messages. */
export function describeFirstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'does not match the expected shape';
  return `${formatIssuePath(issue.path)}: ${issue.message}`;
}

// Compile-time checks that the schemas produce exactly the shared contract types.
type Assert<T extends true> = T;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export type SchemaContractChecks = [
  Assert<Same<z.output<typeof serviceRecordSchema>, ServiceRecord>>,
  Assert<Same<z.output<typeof meetingLogRecordSchema>, MeetingLogRecord>>,
  Assert<Same<z.output<typeof summarySchema>, MeetingLogSummary>>,
  Assert<Same<z.output<typeof serviceUserSchema>, ServiceUser>>,
  Assert<Same<z.output<typeof propertyDefinitionSchema>, PropertyDefinition>>,
];
