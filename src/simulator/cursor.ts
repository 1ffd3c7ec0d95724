import { createHash } from 'node:crypto';
import type { Keyset, ListOrder } from './record-store.js';

/**
 * List cursors: opaque and tamper-evident. A keyset cursor holds the last record of the page; an offset cursor a
 * position in the filtered, ordered list. Both carry the number of the page they lead to, so a page can tell where
 * it stands in its walk. A cursor that does not decode, fails its check, or belongs to another ordering or cursor
 * kind is garbled: 400 invalid_request.
 */

/** What a cursor walks: a record list in its order, the users list, or a resource's property definitions. */
export type CursorOrder = ListOrder | 'users' | 'definitions';

export type ListCursor = { kind: 'keyset'; key: Keyset; page: number } | { kind: 'offset'; offset: number; page: number };

function mac(secret: string, payload: string): string {
  return createHash('sha256').update(secret).update(payload).digest('base64url').slice(0, 12);
}

export function encodeCursor(secret: string, order: CursorOrder, cursor: ListCursor): string {
  const fields =
    cursor.kind === 'keyset' ? [order, 'k', cursor.key.updatedAt, cursor.key.id, cursor.page] : [order, 'o', cursor.offset, cursor.page];
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
  return `${payload}.${mac(secret, payload)}`;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

export function decodeCursor(secret: string, order: CursorOrder, cursor: string): ListCursor | null {
  const dot = cursor.indexOf('.');
  if (dot <= 0) return null;
  const payload = cursor.slice(0, dot);
  if (cursor.slice(dot + 1) !== mac(secret, payload)) return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed[0] !== order) return null;
    const fields = parsed as unknown[];
    if (fields[1] === 'k' && fields.length === 5) {
      const [, , updatedAt, id, page] = fields;
      if (typeof updatedAt !== 'number' || typeof id !== 'string' || !isCount(page)) return null;
      return { kind: 'keyset', key: { updatedAt, id }, page };
    }
    if (fields[1] === 'o' && fields.length === 4) {
      const [, , offset, page] = fields;
      if (!isCount(offset) || !isCount(page)) return null;
      return { kind: 'offset', offset, page };
    }
    return null;
  } catch {
    return null;
  }
}
