import { createHash } from 'node:crypto';
import { ConfigError } from '../core/errors.js';
import type { WaitSource } from './retry.js';

/** Spec (Authentication 2): `sk_` followed by at least 40 base62 characters. */
export const API_KEY_PATTERN = /^sk_[A-Za-z0-9]{40,}$/;

/**
 * Throws `invalid_api_key_format` unless `apiKey` looks like a service key. Checked before any request so a
 * pasted placeholder or a truncated key fails in the operator's terminal, not as a 401 deep in a run.
 * The message and context describe the shape only: the value itself is never repeated.
 */
export function assertApiKeyFormat(apiKey: string): void {
  if (typeof apiKey === 'string' && API_KEY_PATTERN.test(apiKey)) return;
  const hint = describeKeyShape(apiKey);
  throw new ConfigError(
    'invalid_api_key_format',
    `the API key does not look like a Sales Records Service key (${hint}): a key is "sk_" followed by at least 40 ` +
      "letters and digits (A-Z, a-z, 0-9), as issued once in the service's administration screen. " +
      'Set SALES_API_KEY to the whole key, without quotes or spaces.',
    { setting: 'SALES_API_KEY' },
  );
}

/** What is wrong with the key, in words that reveal nothing of it. */
function describeKeyShape(apiKey: unknown): string {
  if (typeof apiKey !== 'string' || apiKey.length === 0) return 'it is empty';
  if (!apiKey.startsWith('sk_')) return 'it does not start with "sk_"';
  const rest = apiKey.slice(3);
  if (/[^A-Za-z0-9]/.test(rest)) return 'it contains characters other than letters and digits after "sk_"';
  return `it has ${rest.length} characters after "sk_", fewer than 40`;
}

/** A stable, non-secret name for a key: `sk_…` + the first 8 hex digits of its SHA-256. */
export function keyFingerprint(apiKey: string): string {
  return `sk_…${createHash('sha256').update(apiKey, 'utf8').digest('hex').slice(0, 8)}`;
}

/**
 * `apiKey` then `apiKeys`, each checked for its format before any request, duplicates dropped. Throws
 * `invalid_api_key_format` (naming the position when there are several, never the value).
 */
export function parseKeys(options: {
  apiKey?: string | undefined;
  apiKeys?: readonly string[] | undefined;
}): Array<{ key: string; fingerprint: string }> {
  const given = [...(options.apiKey === undefined ? [] : [options.apiKey]), ...(options.apiKeys ?? [])];
  if (given.length === 0) assertApiKeyFormat('');
  const pool = new Map<string, string>();
  given.forEach((key, index) => {
    try {
      assertApiKeyFormat(key);
    } catch (error) {
      if (given.length > 1 && error instanceof ConfigError) {
        throw new ConfigError(error.code, `key ${index + 1} of ${given.length}: ${error.message}`, {
          ...error.context,
          keyPosition: index + 1,
        });
      }
      throw error;
    }
    pool.set(key, keyFingerprint(key));
  });
  return [...pool].map(([key, fingerprint]) => ({ key, fingerprint }));
}

/** A key the service told to wait longer than the client waits by itself: nothing is sent on it before `untilMs`. */
export interface SetAsideKey {
  /** Local clock. */
  untilMs: number;
  source: WaitSource;
  /** The answer that said so, e.g. `429 GET /v1/deals/`. */
  seenOn: string;
}

/**
 * The keys one client sends on, by fingerprint: which are live (not rejected with a 401), which are set aside
 * (told to wait too long), and their secrets, which leave this object only as an Authorization header.
 */
export class KeyPool {
  readonly fingerprints: readonly string[];
  private readonly secrets: ReadonlyMap<string, string>;
  /** Keys not (yet) rejected, in the order given: what every acquire offers the limiter. */
  private liveKeys: readonly string[];
  private readonly asideUntil = new Map<string, SetAsideKey>();
  private bound = false;

  constructor(keys: ReadonlyArray<{ key: string; fingerprint: string }>) {
    this.fingerprints = keys.map((k) => k.fingerprint);
    this.secrets = new Map(keys.map((k) => [k.fingerprint, k.key]));
    this.liveKeys = this.fingerprints;
  }

  get live(): readonly string[] {
    return this.liveKeys;
  }

  has(keyId: string): boolean {
    return this.secrets.has(keyId);
  }

  /** The key to send with (the first one's for an id not of this pool: a limiter stub may name none). */
  secretOf(keyId: string): string {
    return this.secrets.get(keyId) ?? this.secrets.get(this.fingerprints[0]!)!;
  }

  setAside(keyId: string, wait: SetAsideKey): void {
    this.asideUntil.set(keyId, wait);
  }

  isSetAside(keyId: string, now: number): boolean {
    return (this.asideUntil.get(keyId)?.untilMs ?? 0) > now;
  }

  /** Live keys not set aside at `now`: what an acquire may offer. */
  ready(now: number): readonly string[] {
    return this.liveKeys.filter((id) => !this.isSetAside(id, now));
  }

  /**
   * The wait of the key a request's cursor came on, while cursors are bound to keys and that live key is set aside:
   * the page can go out on no other. Null otherwise.
   */
  cursorKeyWait(cursorKey: string | undefined, now: number): [string, SetAsideKey] | null {
    if (!this.bound || cursorKey === undefined || !this.liveKeys.includes(cursorKey) || !this.isSetAside(cursorKey, now)) return null;
    return [cursorKey, this.asideUntil.get(cursorKey)!];
  }

  /** The live key set aside that may send again first (call only when every live key is set aside). */
  soonestSetAside(): [string, SetAsideKey] {
    return [...this.asideUntil].filter(([id]) => this.liveKeys.includes(id)).sort((a, b) => a[1].untilMs - b[1].untilMs)[0]!;
  }

  /**
   * Whether the service accepts a cursor only on the key it was given to: learned from a refusal (see
   * `cursorRefusedOnAnotherKey`), for the life of the pool unless the cursor that taught it was refused on its own
   * key too (`unbindCursors`).
   */
  get cursorsBound(): boolean {
    return this.bound;
  }

  /**
   * Whether a refusal such as a foreign cursor gets (`refusesForeignCursor`) may be for the key the request went out
   * on: it went out on `keyId`, and its cursor came on `cursorKey`, another live key of this pool. From then on
   * (`bindCursors`) each request goes out on its cursor's key.
   */
  cursorRefusedOnAnotherKey(cursorKey: string | undefined, keyId: string): boolean {
    return cursorKey !== undefined && cursorKey !== keyId && this.liveKeys.includes(cursorKey);
  }

  /** True the first time: the caller says so once. */
  bindCursors(): boolean {
    if (this.bound) return false;
    this.bound = true;
    return true;
  }

  /** The cursor that taught `bindCursors` was refused on its own key too: it had expired, and taught nothing. */
  unbindCursors(): void {
    this.bound = false;
  }

  /**
   * The keys a request may go out on at `now`: the ready ones, or only its cursor's key once cursors are bound and
   * that key is ready (dropped, any other: the service may then refuse the cursor, and says so; set aside, the
   * request loop fails with its wait, `cursorKeyWait`).
   */
  offerFor(cursorKey: string | undefined, now: number): readonly string[] {
    const ready = this.ready(now);
    return this.bound && cursorKey !== undefined && ready.includes(cursorKey) ? [cursorKey] : ready;
  }

  /** A key the service rejected leaves the pool while another remains; the last one is never dropped. */
  drop(keyId: string): 'dropped' | 'gone' | 'last' {
    const others = this.liveKeys.filter((id) => id !== keyId);
    if (others.length === 0) return 'last';
    if (others.length === this.liveKeys.length) return 'gone';
    this.liveKeys = others;
    return 'dropped';
  }

  /** `text` with every secret of the pool replaced, should a careless service echo one back. */
  redact(text: string): string {
    let out = text;
    for (const key of this.secrets.values()) if (out.includes(key.slice(3))) out = out.split(key.slice(3)).join('…(redacted)');
    return out;
  }
}
