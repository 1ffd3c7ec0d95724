/**
 * A 2xx body checked against the schemas, at the grain the problem lives at. A body that is not JSON, or a list
 * whose envelope (`results` an array, `paging`) is broken, is a bad answer: nothing of it is used. An element of a
 * valid list that breaks its schema is one bad record: it becomes a reject (`RejectedRecord`) and the others are
 * used. A single view that breaks its schema is the same record-level problem, for the caller to quarantine.
 */
import type { z } from 'zod';
import type { RejectedRecord } from '../core/types.js';
import { parseJsonBytes } from './json-bytes.js';
import { describeFirstIssue, listEnvelopeSchema } from './schemas.js';

/** A checked body: the data, or what is wrong with the answer as a whole (`results: expected array, …`). */
export type Checked<T> = { ok: true; data: T } | { ok: false; detail: string };

/** A list answer's content: its valid elements, the rest as rejects, and `paging.next.after` (null on the last page). */
export interface CheckedList<T> {
  results: T[];
  rejects: RejectedRecord[];
  nextCursor: string | null;
}

/** A body's JSON, read from its bytes without one large string (`parseJsonBytes`). */
export function parseJson(body: Buffer): { ok: true; value: unknown } | { ok: false; detail: string } {
  try {
    return { ok: true, value: parseJsonBytes(body) };
  } catch {
    // A page of HTML or XML is something other than the service answering: a web site, a login page, a proxy.
    const markup = /^\s*</.test(body.subarray(0, 64).toString('utf8'));
    return {
      ok: false,
      detail: markup
        ? `the body is a web page, not JSON (${body.length} bytes): check SALES_API_BASE_URL names the API, not a web site or a proxy's page`
        : `the body is not JSON (${body.length} bytes; cut short?)`,
    };
  }
}

/** The whole body against one schema; the detail names the first problem (`results[3].api_name: …`). */
export function checkBody<T>(json: unknown, schema: z.ZodType<T>): Checked<T> {
  const parsed = schema.safeParse(json);
  return parsed.success ? { ok: true, data: parsed.data } : { ok: false, detail: describeFirstIssue(parsed.error) };
}

/**
 * A list or search answer: the envelope strictly, then each element of `results` once against `item`. An element
 * that fails is left out of `results` and reported in `rejects`.
 */
export function checkListBody<T>(json: unknown, item: z.ZodType<T>): Checked<CheckedList<T>> {
  const envelope = listEnvelopeSchema.safeParse(json);
  if (!envelope.success) return { ok: false, detail: describeFirstIssue(envelope.error) };
  const results: T[] = [];
  const rejects: RejectedRecord[] = [];
  for (const element of envelope.data.results) {
    const parsed = item.safeParse(element);
    if (parsed.success) results.push(parsed.data);
    else rejects.push(rejectedRecord(element, parsed.error));
  }
  return { ok: true, data: { results, rejects, nextCursor: envelope.data.paging.next?.after ?? null } };
}

/**
 * The record a single view's body holds. The spec leaves the shape of the single views unshown: the record itself
 * (as a create or a PATCH answers), or wrapped, as the one member of an object (`{"data": {…}}`) or the one element
 * of a list's `results`. A body with an `id` of its own is the record, whatever else; anything else is returned as
 * it is, for the schema to refuse.
 */
export function singleViewRecord(json: unknown): unknown {
  if (!isObject(json) || 'id' in json) return json;
  const { results } = json;
  if (Array.isArray(results)) return results.length === 1 && isObject(results[0]) ? results[0] : json;
  const members = Object.values(json);
  return members.length === 1 && isObject(members[0]) && 'id' in members[0] ? members[0] : json;
}

/**
 * A property definitions answer as `{results, paging?}`. The spec shows deals' (`{"results": [...]}`) and leaves
 * the other resources' unshown: the definitions are `results`, else the body's one other member that is a list
 * (`{"data": [...]}`), else the body itself when it is a list. `paging`, when there, may name a next page: the spec
 * bounds no listing's length, and a long one may be paged as a list is.
 */
export function definitionsEnvelope(json: unknown): unknown {
  if (Array.isArray(json)) return { results: json };
  if (!isObject(json) || 'results' in json) return json;
  const lists = Object.entries(json).filter(([name, value]) => name !== 'paging' && Array.isArray(value));
  return lists.length === 1 ? { results: lists[0]![1], paging: json.paging } : json;
}

/**
 * A single view given as a list with no element: how a service that answers single views as lists (a lookup by id)
 * says it has no such record, as another would with 404 `not_found`.
 */
export function isEmptySingleView(json: unknown): boolean {
  return isObject(json) && !('id' in json) && Array.isArray(json.results) && json.results.length === 0;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** One record against its schema: the record, or the reject it makes (`id` as the element carries it). */
export function checkRecord<T>(json: unknown, schema: z.ZodType<T>): { ok: true; data: T } | { ok: false; reject: RejectedRecord } {
  const parsed = schema.safeParse(json);
  return parsed.success ? { ok: true, data: parsed.data } : { ok: false, reject: rejectedRecord(json, parsed.error) };
}

/**
 * A record that failed its schema, as quarantine keeps it: its `id` when that is a string (even a malformed one),
 * the element as JSON text, and the first problem relative to the record (`properties.amount: …`).
 */
export function rejectedRecord(element: unknown, error: z.ZodError): RejectedRecord {
  const id = element !== null && typeof element === 'object' ? (element as { id?: unknown }).id : undefined;
  return { id: typeof id === 'string' ? id : null, raw: JSON.stringify(element), reason: describeFirstIssue(error) };
}
