/**
 * The contract between the API client and whatever enforces the service's rate limits. The client takes a
 * token before every attempt (retries included) and reports what the server said; the limiter decides how
 * long to wait. The in-process bucket implements it today; a Redis-backed one shared by every process will
 * implement the same interface.
 */
export interface RateLimitObservation {
  /** X-RateLimit-Limit: the per-key limit of the current window. */
  limit?: number | undefined;
  /** X-RateLimit-Remaining: requests left in the current window. */
  remaining?: number | undefined;
  /** X-RateLimit-Reset: Unix seconds at which the window resets. */
  resetAt?: number | undefined;
}

export interface RateLimiter {
  /**
   * Wait until one request may be sent on `keyId` (a key fingerprint, never the key) and take its token,
   * from the key's bucket and the organization's bucket together. Rejects with the signal's reason when aborted.
   * Returns the milliseconds spent waiting.
   */
  acquire(keyId: string, signal?: AbortSignal): Promise<number>;
  /** Believe the server: its headers can only make the limiter more careful. */
  observe(keyId: string, observation: RateLimitObservation): void;
  /** A 429 answered with Retry-After: nobody sends on this key for `ms`. */
  pause(keyId: string, ms: number): void;
}
