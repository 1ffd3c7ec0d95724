import type { Role } from './types.js';

/** API keys and roles. Roles include lower ones; `analyst` equals `read` in this interface. */

const RANK: Record<Role, number> = { read: 1, analyst: 1, write: 2, admin: 3 };

export function roleAllows(role: Role, required: Role): boolean {
  return RANK[role] >= RANK[required];
}

export function isRole(value: unknown): value is Role {
  return value === 'read' || value === 'analyst' || value === 'write' || value === 'admin';
}

/** The token of `Authorization: Bearer <key>`, or null. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? (m[1] as string) : null;
}

export class KeyRing {
  private readonly keys = new Map<string, Role>();

  add(key: string, role: Role): void {
    if (!isRole(role)) throw new Error(`unknown role ${String(role)}`);
    this.keys.set(key, role);
  }

  revoke(key: string): void {
    this.keys.delete(key);
  }

  /** Role of a live key; undefined for unknown or revoked keys. */
  roleOf(key: string): Role | undefined {
    return this.keys.get(key);
  }

  /** The live keys. */
  list(): string[] {
    return [...this.keys.keys()];
  }
}
