/**
 * What one request asks for and what comes back: the types the request loop and its pieces share. Each
 * attempt of the request goes out as this spec; the loop returns the checked data of the first good answer.
 */
import type { Response } from 'got';
import type { SalesyncError } from '../core/errors.js';
import type { Checked } from './validation.js';

export type Query = Record<string, string | number | null | undefined>;

export interface RequestSpec<T> {
  method: 'GET' | 'POST';
  /** Under the base URL, starting with `/v1/` and ending with `/`. */
  path: string;
  query?: Query;
  body?: unknown;
  /**
   * Checks a 2xx body that parsed as JSON. A failed check with a `detail` is a bad answer (retried: the next one
   * may be whole); one with an `error` is thrown at once (a record that breaks its schema comes back the same).
   * `keyId`: the key the answer came on.
   */
  check: (json: unknown, keyId: string) => Checked<T> | { ok: false; error: SalesyncError };
  signal?: AbortSignal | undefined;
  /**
   * Sees a 2xx body's bytes, and the key it answered, before they are parsed (a walk finds the next cursor there
   * and asks for the next page).
   * True when it sent a request: the parse then waits a turn, so that request leaves first and the parse and the
   * check overlap its latency. A guess: whoever uses it must confirm it against the parsed body. The bytes are
   * valid during the call only (see RawResponse.body).
   */
  onText?: ((body: Buffer, keyId: string) => boolean) | undefined;
  /**
   * Sees a 2xx body as soon as it parses, before `check`, unless `onText` sent a request already; true when it
   * sent one (see `onText`).
   */
  onJson?: ((json: unknown, keyId: string) => boolean) | undefined;
  /**
   * The key whose answer named this request's cursor (`after`). Once the service has refused a cursor sent on
   * another key (`KeyPool.cursorsBound`), the request goes out on this one while it is live and ready.
   */
  cursorKey?: string | undefined;
  /** Each attempt's token yields to requests standing level (AcquireOptions.yielding). @defaultValue false */
  yielding?: boolean | undefined;
}

export interface RequestResult<T> {
  data: T;
  /** The answer's `Date` header as ISO 8601 (second precision), or null. */
  serverDate: string | null;
  /** The fingerprint of the key the answer came on. */
  keyId: string;
}

/** An answer as the service sent it: a status, headers and the body's bytes. */
export interface RawResponse {
  status: number;
  headers: Response['headers'];
  /**
   * A view of a buffer the client's pool lent (body-pool.ts), valid only until the request loop gives it back,
   * once the answer has been read: another answer's bytes then overwrite it. Whatever outlives the answer (parsed
   * values, an error's text, a cursor) is decoded from it, never a view of it.
   */
  body: Buffer;
}
