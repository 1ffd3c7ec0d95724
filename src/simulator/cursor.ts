import { createHash } from 'node:crypto';
import type { Keyset, ListOrder } from './record-store.js';

/**
 * List cursors: an opaque, tamper-evident keyset position (the last record of the page). A cursor that does not
 * decode, fails its check, or belongs to another ordering is garbled: 400 invalid_request.
 */

function mac(secret: string, payload: string): string {
  return createHash('sha256').update(secret).update(payload).digest('base64url').slice(0, 12);
}

export function encodeCursor(secret: string, order: ListOrder | 'users', key: Keyset): string {
  const payload = Buffer.from(JSON.stringify([order, key.updatedAt, key.id])).toString('base64url');
  return `${payload}.${mac(secret, payload)}`;
}

export function decodeCursor(secret: string, order: ListOrder | 'users', cursor: string): Keyset | null {
  const dot = cursor.indexOf('.');
  if (dot <= 0) return null;
  const payload = cursor.slice(0, dot);
  if (cursor.slice(dot + 1) !== mac(secret, payload)) return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 3) return null;
    const [o, updatedAt, id] = parsed as unknown[];
    if (o !== order || typeof updatedAt !== 'number' || typeof id !== 'string') return null;
    return { updatedAt, id };
  } catch {
    return null;
  }
}
