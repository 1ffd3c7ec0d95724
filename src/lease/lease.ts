import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { RELEASE_LEASE, RENEW_LEASE } from './scripts.js';

/**
 * A Redis lease: one holder at a time for a named thing (a resource's walk, a warehouse file). Taken with
 * SET NX PX and a token unique to this holder, renewed while held, released only by its owner. A holder that
 * dies stops renewing, so its lease lapses after `ttlMs` and the next one takes over.
 */
export interface LeaseOptions {
  /** How long the lease outlives a holder that stopped renewing it. @defaultValue 30000 */
  ttlMs?: number;
  /** Who holds it, for the log lines of those waiting. @defaultValue `<hostname> pid <pid>` */
  holder?: string;
}

export interface AcquireLeaseOptions extends LeaseOptions {
  /** How long to wait for a held lease; 0 tries once. @defaultValue 0 */
  waitMs?: number;
  /** Pause between attempts while waiting. @defaultValue min(1000, ttlMs / 3) */
  pollMs?: number;
  signal?: AbortSignal;
  /** Called once, when the first attempt finds the lease held: say so in the log. */
  onHeld?: (holder: string) => void;
}

export interface Lease {
  readonly key: string;
  readonly token: string;
  /** Aborted when the lease is lost (a renewal found it gone or taken): stop the work it guards. */
  readonly lost: AbortSignal;
  /** Stop renewing and delete the lease if it is still ours. Idempotent. */
  release(): Promise<void>;
}

const DEFAULT_TTL_MS = 30_000;

export function defaultHolder(): string {
  return `${hostname()} pid ${process.pid}`;
}

/** The holder named in a lease's value, or null when it is free. */
export async function leaseHolder(redis: Redis, key: string): Promise<string | null> {
  const value = await redis.get(key);
  return value === null ? null : holderOf(value);
}

function holderOf(token: string): string {
  return token.slice(0, token.lastIndexOf('|'));
}

/** One attempt: the lease, or null when someone else holds it. */
export async function tryAcquireLease(redis: Redis, key: string, options: LeaseOptions = {}): Promise<Lease | null> {
  const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
  const token = `${options.holder ?? defaultHolder()}|${randomUUID()}`;
  const taken = await redis.set(key, token, 'PX', ttlMs, 'NX');
  if (taken !== 'OK') return null;
  return heldLease(redis, key, token, ttlMs);
}

/** Take the lease, waiting up to `waitMs` for its holder to release it or let it lapse. Null when still held. */
export async function acquireLease(redis: Redis, key: string, options: AcquireLeaseOptions = {}): Promise<Lease | null> {
  const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
  const deadline = Date.now() + (options.waitMs ?? 0);
  const pollMs = options.pollMs ?? Math.min(1000, Math.max(50, Math.floor(ttlMs / 3)));
  let told = false;
  for (;;) {
    options.signal?.throwIfAborted();
    const lease = await tryAcquireLease(redis, key, options);
    if (lease) return lease;
    if (!told && options.onHeld) {
      told = true;
      options.onHeld((await leaseHolder(redis, key)) ?? 'another process');
    }
    const left = deadline - Date.now();
    if (left <= 0) return null;
    await sleep(Math.min(pollMs, left), undefined, options.signal ? { signal: options.signal } : {});
  }
}

function heldLease(redis: Redis, key: string, token: string, ttlMs: number): Lease {
  const lost = new AbortController();
  let released = false;
  // Renew well before expiry so a slow round trip or a short event-loop stall never lets it lapse.
  const timer = setInterval(
    () => {
      redis.eval(RENEW_LEASE, 1, key, token, String(ttlMs)).then(
        (renewed) => {
          if (Number(renewed) !== 1 && !released) {
            clearInterval(timer);
            lost.abort(new Error(`lost the lease ${key}: it lapsed or was taken by another holder`));
          }
        },
        // A Redis blip: keep trying; the lease lapses only if renewals fail for a whole ttl.
        () => undefined,
      );
    },
    Math.max(10, Math.floor(ttlMs / 3)),
  );
  timer.unref();
  return {
    key,
    token,
    lost: lost.signal,
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      await redis.eval(RELEASE_LEASE, 1, key, token);
    },
  };
}
