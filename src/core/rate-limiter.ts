/**
 * The contract between the API client and whatever enforces the service's rate limits. The client takes a
 * token before every attempt (retries included) and reports what the server said; the limiter decides how
 * long to wait and, with several keys, which key to send on. The in-process bucket implements it for the CLI
 * without Redis; the Redis-backed one shares one budget between every process.
 */
export interface RateLimitObservation {
  /** X-RateLimit-Limit: the per-key limit of the current window. */
  limit?: number | undefined;
  /** X-RateLimit-Remaining: requests left in the current window. */
  remaining?: number | undefined;
  /** X-RateLimit-Reset: Unix seconds at which the window resets. */
  resetAt?: number | undefined;
}

/**
 * Who is asking. `sync` (scheduled and manual incremental walks, reconciles) may use the whole budget. The other
 * lanes may too while the schedule leaves it, but are held to their share while it asks: a long backfill or a
 * summaries sweep never starves the schedule, and alone it is not slowed by a cap.
 */
export type RateLane = 'sync' | 'backfill' | 'summaries';

export interface AcquireOptions {
  signal?: AbortSignal | undefined;
  /** @defaultValue 'sync' */
  lane?: RateLane | undefined;
  /**
   * Takes only tokens nobody standing level waits for (half the burst, as a lane beyond its share), never its
   * lane's share: a walk's single-record GETs, many at once, give way to the pages the walks wait on one by one.
   * Alone it runs at the full rate. Waits in a queue of its own, so it never holds back a level request behind it.
   * @defaultValue false
   */
  yielding?: boolean | undefined;
  /**
   * How many keys the caller's pool can spend now, of which a lane's share is figured: a list page offered only its
   * cursor's key (a service binding cursors to keys) still belongs to a walk spending the whole pool.
   * @defaultValue the keys offered
   */
  poolKeys?: number | undefined;
}

export interface Grant {
  /** The key to send this request on (a fingerprint, never the key). */
  keyId: string;
  /** Milliseconds spent waiting for the token. */
  waitedMs: number;
}

export interface RateLimiter {
  /**
   * Wait until one request may be sent on one of `keyIds` (key fingerprints) and take its token, from that
   * key's bucket and the organization's bucket (and, for a lane within its share, the lane's bucket). Rejects with the signal's reason
   * when aborted.
   */
  acquire(keyIds: readonly string[], options?: AcquireOptions): Promise<Grant>;
  /** Believe the server: its headers can only make the limiter more careful. */
  observe(keyId: string, observation: RateLimitObservation): void;
  /** A 429 answered with Retry-After: nobody sends on this key for `ms`. */
  pause(keyId: string, ms: number): void;
  /** Rejects whoever still waits and releases what the limiter holds (the Redis one); optional. */
  close?(): Promise<void>;
}
