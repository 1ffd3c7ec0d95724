import type { AcquireOptions, Grant, RateLane, RateLimitObservation, RateLimiter } from '../core/rate-limiter.js';
import { announcedKeyParams, laneParams, queueOf, resolveBudget, type LimiterBudgetOptions, type ResolvedBudget } from './budget.js';
import { gcraLimitAvailable, gcraParams, gcraTake, gcraWait, gcraYielding, type GcraParams, type GcraState } from './gcra.js';

export { gcraParams, gcraTake, gcraWait } from './gcra.js';
export type { GcraParams, GcraState } from './gcra.js';

export interface TokenBucketOptions extends LimiterBudgetOptions {
  /** Clock, for tests. @defaultValue Date.now */
  now?: () => number;
}

interface Bucket {
  gcra: GcraState;
  params: GcraParams;
}

interface KeyBucket extends Bucket {
  pausedUntil: number;
}

interface Choice {
  key: KeyBucket;
  keyId: string;
  wait: number;
}

interface Waiter {
  keyIds: readonly string[];
  lane: RateLane;
  /** AcquireOptions.yielding. */
  yielding: boolean;
  /** AcquireOptions.poolKeys. */
  poolKeys: number;
  started: number;
  resolve(grant: Grant): void;
  reject(reason: unknown): void;
  /** Detaches the abort listener once the waiter is settled. */
  cleanup(): void;
}

/**
 * The in-process limiter: correct for one process (the CLI without Redis). Every request takes one token from
 * the key it is sent on and from the organization's bucket. A `sync` request stands level: it may use those
 * buckets' whole burst. A backfill or summaries request stands level too while its lane's bucket (its share)
 * has a token, and takes it; beyond its share it yields: it may use only half the burst (gcraYielding), so a
 * sync asking beside it goes first and a backfill alone still runs at the full rate. The same rules as
 * `lua/acquire.lua`, for the shared limiter. A request marked yielding (AcquireOptions.yielding) always yields.
 * Waiters are served in arrival order within a queue, one per lane and one per lane's yielding requests (a backfill
 * waiting on its share never holds back a sync behind it, nor a yielding request a level one), with one timer for
 * all of them, so a thousand waiting requests cost no polling.
 */
export class TokenBucketLimiter implements RateLimiter {
  private readonly keys = new Map<string, KeyBucket>();
  private readonly lanes = new Map<RateLane, Bucket>();
  private readonly org: Bucket;
  private readonly budget: ResolvedBudget;
  private readonly now: () => number;
  private readonly waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(options: TokenBucketOptions = {}) {
    this.budget = resolveBudget(options);
    this.now = options.now ?? Date.now;
    this.org = { gcra: { tat: 0 }, params: gcraParams(this.budget.perOrgPerMinute, this.budget.burst) };
  }

  acquire(keyIds: readonly string[], options: AcquireOptions = {}): Promise<Grant> {
    if (keyIds.length === 0) return Promise.reject(new Error('acquire needs at least one key'));
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Grant>((resolve, reject) => {
      const onAbort = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(signal?.reason);
        this.schedule();
      };
      const waiter: Waiter = {
        keyIds: [...keyIds],
        lane: options.lane ?? 'sync',
        yielding: options.yielding ?? false,
        poolKeys: options.poolKeys ?? keyIds.length,
        started: this.now(),
        resolve,
        reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.schedule();
    });
  }

  observe(keyId: string, observation: RateLimitObservation): void {
    const bucket = this.keyBucket(keyId);
    const now = this.now();
    bucket.params = announcedKeyParams(this.budget, observation.limit) ?? bucket.params;
    if (observation.remaining === 0 && observation.resetAt !== undefined) {
      bucket.pausedUntil = Math.max(bucket.pausedUntil, observation.resetAt * 1000);
    } else if (observation.remaining !== undefined) {
      // Someone else spends this key's budget too: never send more back to back than the server has left.
      bucket.gcra = gcraLimitAvailable(bucket.gcra, bucket.params, now, observation.remaining);
    }
    // No reschedule: this only lengthens waits, and a timer that fires early just recomputes.
  }

  pause(keyId: string, ms: number): void {
    const bucket = this.keyBucket(keyId);
    bucket.pausedUntil = Math.max(bucket.pausedUntil, this.now() + ms);
  }

  private keyBucket(keyId: string): KeyBucket {
    let bucket = this.keys.get(keyId);
    if (!bucket) {
      bucket = { gcra: { tat: 0 }, params: gcraParams(this.budget.perKeyPerMinute, this.budget.burst), pausedUntil: 0 };
      this.keys.set(keyId, bucket);
    }
    return bucket;
  }

  private laneBucket(lane: RateLane, keyCount: number): Bucket | null {
    const params = laneParams(this.budget, lane, keyCount);
    if (!params) return null;
    let bucket = this.lanes.get(lane);
    if (!bucket) {
      bucket = { gcra: { tat: 0 }, params };
      this.lanes.set(lane, bucket);
    }
    // The pool can shrink (a key answering 401): the cap follows the keys still in use.
    bucket.params = params;
    return bucket;
  }

  /**
   * The key whose token comes first for a request standing level or yielding (ties: the one with most tokens
   * left, so a pool spreads), and the wait, the organization's included.
   */
  private choose(waiter: Waiter, now: number, yielding: boolean): Choice {
    const view = (params: GcraParams) => (yielding ? gcraYielding(params) : params);
    let best: Choice | null = null;
    for (const keyId of waiter.keyIds) {
      const key = this.keyBucket(keyId);
      const wait = Math.max(key.pausedUntil - now, gcraWait(key.gcra, view(key.params), now), 0);
      if (!best || wait < best.wait || (wait === best.wait && key.gcra.tat < best.key.gcra.tat)) best = { key, keyId, wait };
    }
    best!.wait = Math.max(best!.wait, gcraWait(this.org.gcra, view(this.org.params), now));
    return best!;
  }

  /**
   * Grants the waiter now if it may go, level (within its lane's share, or sync) before yielding; else says how
   * long until it could, either way.
   */
  private tryGrant(waiter: Waiter, now: number): number {
    if (waiter.yielding) {
      const yielding = this.choose(waiter, now, true);
      if (yielding.wait === 0) this.grant(waiter, yielding, now);
      return yielding.wait;
    }
    const lane = this.laneBucket(waiter.lane, waiter.poolKeys);
    const level = this.choose(waiter, now, false);
    const levelWait = Math.max(level.wait, lane ? gcraWait(lane.gcra, lane.params, now) : 0);
    if (levelWait === 0) {
      if (lane) lane.gcra = gcraTake(lane.gcra, lane.params, now);
      this.grant(waiter, level, now);
      return 0;
    }
    if (!lane) return levelWait;
    // Beyond its share: only what the schedule leaves, and its lane's bucket is left alone.
    const yielding = this.choose(waiter, now, true);
    if (yielding.wait === 0) {
      this.grant(waiter, yielding, now);
      return 0;
    }
    return Math.min(levelWait, yielding.wait);
  }

  private grant(waiter: Waiter, choice: Choice, now: number): void {
    choice.key.gcra = gcraTake(choice.key.gcra, choice.key.params, now);
    this.org.gcra = gcraTake(this.org.gcra, this.org.params, now);
    this.waiters.splice(this.waiters.indexOf(waiter), 1);
    waiter.cleanup();
    waiter.resolve({ keyId: choice.keyId, waitedMs: now - waiter.started });
  }

  /** Grants every waiter that may go now, then sleeps until the soonest of the rest could. */
  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const now = this.now();
    const blockedQueues = new Set<string>();
    let soonest = Infinity;
    for (let i = 0; i < this.waiters.length;) {
      const waiter = this.waiters[i]!;
      // First come, first served within a queue: nobody overtakes a waiting head of the same queue.
      if (blockedQueues.has(queueOf(waiter))) {
        i += 1;
        continue;
      }
      const wait = this.tryGrant(waiter, now);
      // Granted: the waiter left the list, and the next one moved up to `i`.
      if (wait === 0) continue;
      blockedQueues.add(queueOf(waiter));
      soonest = Math.min(soonest, wait);
      i += 1;
    }
    if (soonest !== Infinity) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.schedule();
      }, Math.ceil(soonest));
    }
  }
}

/** A limiter that never waits: for tests that exercise something else. */
export const unlimited: RateLimiter = {
  acquire: async (keyIds) => ({ keyId: keyIds[0] ?? '', waitedMs: 0 }),
  observe: () => undefined,
  pause: () => undefined,
};
