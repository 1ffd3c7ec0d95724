import { setTimeout as sleep } from 'node:timers/promises';
import type { AcquireOptions, Grant, RateLimitObservation, RateLimiter } from '../core/rate-limiter.js';

export interface TokenBucketOptions {
  /**
   * Requests per minute allowed per key.
   * @defaultValue 1000 (the service's per-key limit)
   */
  perKeyPerMinute?: number;
  /**
   * Requests per minute allowed for the whole organization, all keys together.
   * @defaultValue 5000 (the service's per-organization limit)
   */
  perOrgPerMinute?: number;
  /**
   * Tokens a bucket may hold: how many requests may go out back to back after an idle spell.
   * The refill rate is lowered so that burst + one minute of refill never exceeds the limit: no 60-second
   * window, however it is aligned, ever holds more than the limit.
   * @defaultValue 10
   */
  burst?: number;
  /** Clock, for tests. @defaultValue Date.now */
  now?: () => number;
}

/**
 * Generic cell rate algorithm: each bucket is one number, the theoretical arrival time (TAT) of the next
 * request. Smooth by construction, so a server counting in sliding or fixed windows never sees a burst at a
 * window's edge.
 */
export interface GcraState {
  /** Milliseconds since epoch at which the bucket is next empty of debt. */
  tat: number;
}

export interface GcraParams {
  /** Milliseconds between requests at the sustained rate. */
  intervalMs: number;
  /** How far ahead of now the TAT may run: (burst - 1) intervals. */
  toleranceMs: number;
}

export function gcraParams(perMinute: number, burst: number): GcraParams {
  const b = Math.max(1, Math.min(burst, Math.floor(perMinute / 2)));
  const sustained = Math.max(1, perMinute - b);
  const intervalMs = 60_000 / sustained;
  return { intervalMs, toleranceMs: (b - 1) * intervalMs };
}

/** How long until a request may go out on this bucket (0: now). Pure. */
export function gcraWait(state: GcraState, params: GcraParams, now: number): number {
  const tat = Math.max(state.tat, now);
  const wait = tat - params.toleranceMs - now;
  // Intervals are fractional milliseconds: ignore float dust so a full burst really goes out at once.
  return wait > 1e-6 ? wait : 0;
}

/** The bucket after one request is sent at `now` (call only when gcraWait is 0). Pure. */
export function gcraTake(state: GcraState, params: GcraParams, now: number): GcraState {
  return { tat: Math.max(state.tat, now) + params.intervalMs };
}

interface KeyBucket {
  gcra: GcraState;
  params: GcraParams;
  pausedUntil: number;
}

/**
 * The in-process limiter: correct for one process (the CLI without Redis). Waiters are served in order,
 * one timer at a time, so a thousand waiting requests cost no polling.
 */
export class TokenBucketLimiter implements RateLimiter {
  private readonly keys = new Map<string, KeyBucket>();
  private readonly org: { gcra: GcraState; params: GcraParams };
  private readonly perKey: number;
  private readonly burst: number;
  private readonly now: () => number;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: TokenBucketOptions = {}) {
    this.perKey = options.perKeyPerMinute ?? 1000;
    this.burst = options.burst ?? 10;
    this.now = options.now ?? Date.now;
    this.org = { gcra: { tat: 0 }, params: gcraParams(options.perOrgPerMinute ?? 5000, this.burst) };
  }

  acquire(keyIds: readonly string[], options: AcquireOptions = {}): Promise<Grant> {
    const keyId = keyIds[0];
    if (keyId === undefined) return Promise.reject(new Error('acquire needs at least one key'));
    // Serialise takers so the buckets are read and written by one at a time, in arrival order.
    const turn = this.queue.then(async () => ({ keyId, waitedMs: await this.takeWhenReady(keyId, options.signal) }));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  observe(keyId: string, observation: RateLimitObservation): void {
    const bucket = this.bucket(keyId);
    const now = this.now();
    if (observation.limit !== undefined && observation.limit > 0 && observation.limit < this.perKey) {
      // The server grants this key less than we assumed: slow down to its figure.
      bucket.params = gcraParams(observation.limit, this.burst);
    }
    if (observation.remaining === 0 && observation.resetAt !== undefined) {
      bucket.pausedUntil = Math.max(bucket.pausedUntil, observation.resetAt * 1000);
    } else if (observation.remaining !== undefined && observation.remaining < this.burst) {
      // Someone else spends this key's budget too: run as if the bucket were empty.
      bucket.gcra = { tat: Math.max(bucket.gcra.tat, now + bucket.params.toleranceMs) };
    }
  }

  pause(keyId: string, ms: number): void {
    const bucket = this.bucket(keyId);
    bucket.pausedUntil = Math.max(bucket.pausedUntil, this.now() + ms);
  }

  private bucket(keyId: string): KeyBucket {
    let bucket = this.keys.get(keyId);
    if (!bucket) {
      bucket = { gcra: { tat: 0 }, params: gcraParams(this.perKey, this.burst), pausedUntil: 0 };
      this.keys.set(keyId, bucket);
    }
    return bucket;
  }

  private async takeWhenReady(keyId: string, signal?: AbortSignal): Promise<number> {
    const started = this.now();
    for (;;) {
      signal?.throwIfAborted();
      const bucket = this.bucket(keyId);
      const now = this.now();
      const wait = Math.max(
        bucket.pausedUntil - now,
        gcraWait(bucket.gcra, bucket.params, now),
        gcraWait(this.org.gcra, this.org.params, now),
      );
      if (wait <= 0) {
        bucket.gcra = gcraTake(bucket.gcra, bucket.params, now);
        this.org.gcra = gcraTake(this.org.gcra, this.org.params, now);
        return this.now() - started;
      }
      await sleep(Math.ceil(wait), undefined, signal ? { signal } : undefined);
    }
  }
}

/** A limiter that never waits: for tests that exercise something else. */
export const unlimited: RateLimiter = {
  acquire: async (keyIds) => ({ keyId: keyIds[0] ?? '', waitedMs: 0 }),
  observe: () => undefined,
  pause: () => undefined,
};
