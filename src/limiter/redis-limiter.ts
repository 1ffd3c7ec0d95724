/**
 * The shared limiter: every process of a fleet (workers, schedulers, a manual CLI run with REDIS_URL) takes its
 * tokens from the same GCRA buckets in Redis, so together they never exceed the service's per-key and
 * per-organization limits. Each token is taken by one atomic Lua script (lua/acquire.lua) on Redis's clock, which
 * also applies the lanes' rules exactly as the in-process TokenBucketLimiter does: a sync request, or a lane's
 * within its share, stands level; a lane beyond its share yields (half the burst), so it runs at the full rate
 * alone and gives way to a sync in any process at once.
 *
 * Waiting is local: one waiter loop per process asks Redis for the head of each lane's FIFO queue, and when
 * nothing may go it sleeps for the wait hint the script returned, so a thousand queued requests cost one Redis
 * call per grant or per hint, never a polling storm.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { SalesyncError } from '../core/errors.js';
import type { AcquireOptions, Grant, RateLane, RateLimitObservation, RateLimiter } from '../core/rate-limiter.js';
import { announcedKeyParams, laneParams, queueOf, resolveBudget, type LimiterBudgetOptions, type ResolvedBudget } from './budget.js';
import { gcraParams, gcraYielding, type GcraParams } from './gcra.js';

/** The little a limiter says: pino's Logger fits. */
export interface LimiterLogger {
  warn(details: object, message: string): void;
  info?(details: object, message: string): void;
}

export interface RedisLimiterOptions extends LimiterBudgetOptions {
  /** A connected client; the limiter defines its scripts on it and never closes it (its owner does). */
  redis: Redis;
  /**
   * Names every key as `{<prefix>}:limiter:...`: one hash tag, so the script's keys share a Cluster slot.
   * Every process of one organization must use the same prefix. @defaultValue 'salesync'
   */
  prefix?: string;
  logger?: LimiterLogger;
  /**
   * How long Redis may keep failing before waiting requests are rejected with `rate_limiter_unavailable`
   * (retriable) instead of waiting on: a restart is ridden out, a Redis that is gone is reported.
   * @defaultValue 30000
   */
  unavailableMs?: number;
}

/** A limiter holding resources beyond memory: `close` rejects whoever still waits and stops the loop. */
export interface ClosableRateLimiter extends RateLimiter {
  close(): Promise<void>;
}

type AcquireReply = [granted: number, keyIndex: number, waitMs: number];

/** The three scripts, as ioredis exposes them after defineCommand (numberOfKeys given per call). */
interface LimiterCommands {
  salesyncLimiterAcquire(numKeys: number, ...args: Array<string | number>): Promise<AcquireReply>;
  salesyncLimiterPause(numKeys: number, ...args: Array<string | number>): Promise<number>;
  salesyncLimiterObserve(numKeys: number, ...args: Array<string | number>): Promise<number>;
}

interface Waiter {
  keyIds: readonly string[];
  lane: RateLane;
  /** AcquireOptions.yielding. */
  yielding: boolean;
  /** AcquireOptions.poolKeys. */
  poolKeys: number;
  started: number;
  signal: AbortSignal | undefined;
  resolve(grant: Grant): void;
  reject(reason: unknown): void;
  cleanup(): void;
}

/** Longest one script call may take before it counts as Redis failing. */
const CALL_TIMEOUT_MS = 5000;

const SCRIPTS = { salesyncLimiterAcquire: 'acquire.lua', salesyncLimiterPause: 'pause.lua', salesyncLimiterObserve: 'observe.lua' };

/** A script's source, beside this module (`npm run build` copies the scripts into `dist/`). */
export function readLimiterScript(name: string): string {
  return readFileSync(fileURLToPath(new URL(`./lua/${name}`, import.meta.url)), 'utf8');
}

export function createRedisLimiter(options: RedisLimiterOptions): ClosableRateLimiter {
  return new RedisRateLimiter(options);
}

class RedisRateLimiter implements ClosableRateLimiter {
  private readonly redis: Redis & LimiterCommands;
  private readonly budget: ResolvedBudget;
  private readonly tag: string;
  private readonly logger: LimiterLogger | undefined;
  private readonly unavailableMs: number;
  private readonly orgParams: GcraParams;
  /** Per-key paces the server last announced (X-RateLimit-Limit, capped at ours): this process spaces those keys so. */
  private readonly keyParams = new Map<string, GcraParams>();
  private readonly waiters: Waiter[] = [];
  private running = false;
  /** Set when a waiter arrives while the loop is busy, so it re-reads the queue before sleeping. */
  private dirty = false;
  private wakeUp: (() => void) | null = null;
  private failingSince: number | null = null;
  private closed = false;

  constructor(options: RedisLimiterOptions) {
    this.budget = resolveBudget(options);
    this.tag = `{${options.prefix ?? 'salesync'}}:limiter`;
    this.logger = options.logger;
    this.unavailableMs = options.unavailableMs ?? 30_000;
    this.orgParams = gcraParams(this.budget.perOrgPerMinute, this.budget.burst);
    const redis = options.redis as Redis & Partial<LimiterCommands>;
    for (const [name, file] of Object.entries(SCRIPTS)) {
      // Defining twice on one client is harmless (same source, same SHA); ioredis falls back from EVALSHA to EVAL.
      if (typeof redis[name as keyof LimiterCommands] !== 'function') redis.defineCommand(name, { lua: readLimiterScript(file) });
    }
    this.redis = redis as Redis & LimiterCommands;
  }

  acquire(keyIds: readonly string[], options: AcquireOptions = {}): Promise<Grant> {
    if (keyIds.length === 0) return Promise.reject(new Error('acquire needs at least one key'));
    if (this.closed) return Promise.reject(new Error('the rate limiter is closed'));
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Grant>((resolve, reject) => {
      const onAbort = () => {
        const wasHead = this.queueHeads().includes(waiter);
        this.remove(waiter);
        reject(signal?.reason);
        // A new head (or an empty queue) should be looked at now, not at the end of the loop's sleep.
        if (wasHead) this.kick();
      };
      const waiter: Waiter = {
        keyIds: [...keyIds],
        lane: options.lane ?? 'sync',
        yielding: options.yielding ?? false,
        poolKeys: options.poolKeys ?? keyIds.length,
        started: Date.now(),
        signal,
        resolve,
        reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      // Behind another waiter of its queue it cannot go first: no need to wake the loop (and call Redis) for it.
      const headOfQueue = !this.waiters.some((w) => queueOf(w) === queueOf(waiter));
      this.waiters.push(waiter);
      if (headOfQueue || !this.running) this.kick();
    });
  }

  observe(keyId: string, observation: RateLimitObservation): void {
    const { limit, remaining, resetAt } = observation;
    const announced = announcedKeyParams(this.budget, limit);
    if (announced) this.keyParams.set(keyId, announced);
    if (remaining === 0 && resetAt !== undefined) {
      const ms = resetAt * 1000 - Date.now();
      if (ms > 0) this.pause(keyId, ms);
      return;
    }
    // Our bucket never holds more than `burst` tokens, so a larger remaining cannot tighten it: skip the call.
    if (remaining === undefined || remaining >= this.budget.burst) return;
    const params = this.paramsOf(keyId);
    this.redis
      .salesyncLimiterObserve(1, this.keyBucket(keyId), params.intervalMs, params.toleranceMs, remaining)
      .catch((error: unknown) =>
        this.logger?.warn({ err: describe(error), keyFingerprint: keyId }, "rate limiter: could not record the server's remaining count"),
      );
  }

  pause(keyId: string, ms: number): void {
    if (!(ms > 0)) return;
    this.redis
      .salesyncLimiterPause(1, this.keyBucket(keyId), Math.ceil(ms))
      .catch((error: unknown) =>
        this.logger?.warn({ err: describe(error), keyFingerprint: keyId, ms }, 'rate limiter: could not share a pause'),
      );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) {
      waiter.cleanup();
      waiter.reject(new Error('the rate limiter was closed while this request waited'));
    }
    this.kick();
  }

  private keyBucket(keyId: string): string {
    return `${this.tag}:key:${keyId}`;
  }

  private paramsOf(keyId: string): GcraParams {
    return this.keyParams.get(keyId) ?? gcraParams(this.budget.perKeyPerMinute, this.budget.burst);
  }

  private remove(waiter: Waiter): boolean {
    const index = this.waiters.indexOf(waiter);
    if (index < 0) return false;
    this.waiters.splice(index, 1);
    waiter.cleanup();
    return true;
  }

  private kick(): void {
    if (!this.running) {
      this.running = true;
      void this.run().finally(() => {
        this.running = false;
        // A waiter that arrived as the loop was finishing.
        if (this.waiters.length > 0 && !this.closed) this.kick();
      });
      return;
    }
    this.dirty = true;
    this.wakeUp?.();
  }

  /** One loop per process: try the head of each lane, grant or learn how long to wait, sleep, repeat. */
  private async run(): Promise<void> {
    while (this.waiters.length > 0 && !this.closed) {
      this.dirty = false;
      let sleepMs = Infinity;
      for (const head of this.queueHeads()) {
        let reply: AcquireReply;
        try {
          reply = await this.tryAcquire(head);
          this.recovered();
        } catch (error) {
          sleepMs = Math.min(sleepMs, this.failed(error));
          break;
        }
        const [granted, index, waitMs] = reply;
        if (granted === 1) {
          const keyId = head.keyIds[index - 1]!;
          // An abort that landed during the round trip wastes this one token: harmless, and rare.
          if (this.remove(head)) head.resolve({ keyId, waitedMs: Date.now() - head.started });
          sleepMs = 0;
        } else {
          sleepMs = Math.min(sleepMs, waitMs);
        }
      }
      if (sleepMs > 0 && sleepMs !== Infinity && !this.dirty) await this.sleep(sleepMs);
    }
  }

  /**
   * The first waiter of each queue (a lane's, a lane's yielding requests'), oldest first: within a queue nobody
   * overtakes; queues never block each other.
   */
  private queueHeads(): Waiter[] {
    const seen = new Set<string>();
    const heads: Waiter[] = [];
    for (const waiter of this.waiters) {
      if (seen.has(queueOf(waiter))) continue;
      seen.add(queueOf(waiter));
      heads.push(waiter);
    }
    return heads;
  }

  private async tryAcquire(waiter: Waiter): Promise<AcquireReply> {
    const lane = laneParams(this.budget, waiter.lane, waiter.poolKeys);
    const keys = [`${this.tag}:org`, `${this.tag}:lane:${waiter.lane}`, ...waiter.keyIds.map((id) => this.keyBucket(id))];
    const args: Array<string | number> = [
      this.orgParams.intervalMs,
      this.orgParams.toleranceMs,
      gcraYielding(this.orgParams).toleranceMs,
      lane?.intervalMs ?? 0,
      lane?.toleranceMs ?? 0,
      waiter.yielding ? 1 : 0,
    ];
    for (const keyId of waiter.keyIds) {
      const params = this.paramsOf(keyId);
      args.push(params.intervalMs, params.toleranceMs, gcraYielding(params).toleranceMs);
    }
    // ioredis may hold a command while it reconnects (maxRetriesPerRequest: null): bound the wait so the
    // loop keeps its own account of how long Redis has been away.
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${CALL_TIMEOUT_MS} ms`)), CALL_TIMEOUT_MS);
    });
    try {
      const reply = await Promise.race([this.redis.salesyncLimiterAcquire(keys.length, ...keys, ...args), timeout]);
      return [Number(reply[0]), Number(reply[1]), Number(reply[2])];
    } finally {
      clearTimeout(timer);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }

  /** Redis failed: back off, and after `unavailableMs` of failures give up on whoever waits. */
  private failed(error: unknown): number {
    const now = Date.now();
    if (this.failingSince === null) {
      this.failingSince = now;
      this.logger?.warn({ err: describe(error) }, 'rate limiter: Redis is not answering; requests wait for it');
    }
    const failingFor = now - this.failingSince;
    if (failingFor >= this.unavailableMs) {
      const reason = new SalesyncError(
        'rate_limiter_unavailable',
        `the shared rate limiter's Redis has not answered for ${Math.round(failingFor / 1000)} s (${describe(error)}): ` +
          'check REDIS_URL and that Redis is running',
        { disposition: 'retriable', cause: error },
      );
      for (const waiter of this.waiters.splice(0)) {
        waiter.cleanup();
        waiter.reject(reason);
      }
      this.failingSince = null;
      return 0;
    }
    // Back off from 100 ms to 2 s: quick to resume after a restart, quiet while Redis is down.
    return Math.min(2000, 100 * 2 ** Math.floor(failingFor / 1000));
  }

  private recovered(): void {
    if (this.failingSince === null) return;
    this.logger?.info?.({ downMs: Date.now() - this.failingSince }, 'rate limiter: Redis answers again');
    this.failingSince = null;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
