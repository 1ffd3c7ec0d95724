import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { Queue, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { ResourceName } from '../src/core/resources.js';
import type { SalesyncError } from '../src/core/errors.js';
import { boundedRetryStrategy, redisAddress, redisFailureReason, redisUnavailable, waitForRedis } from './redis-connection.js';
import type { SyncJobData } from './sync-job.js';

/** The one queue every salesync job goes through; `redisPrefix` namespaces its keys. */
export const QUEUE_NAME = 'salesync';

/** Reconcile and summaries payloads are defined by their processors; the queue only needs the resource. */
export interface ResourceJobData {
  resource?: ResourceName;
  [field: string]: unknown;
}
/** A scheduler only ever emits `tick`; the tick's handler adds the real job (sync-job.ts, backfill-job.ts carry their payloads). */
export type RealJobKind = 'sync' | 'backfill' | 'reconcile' | 'summaries';
export interface TickJobData {
  kind: Exclude<RealJobKind, 'backfill'>;
  data: SyncJobData | ResourceJobData;
}
export type JobKind = 'tick' | RealJobKind;

/**
 * Attempts and backoff for retriable failures (fatal ones throw UnrecoverableError and never retry).
 * Finished jobs are kept for a while so the dashboard can show them, then trimmed.
 */
export const JOB_DEFAULTS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 30_000 },
  removeOnComplete: { count: 200, age: 7 * 86_400 },
  removeOnFail: { count: 500, age: 30 * 86_400 },
};

/** At most one queued-or-running job per kind and resource: overlapping ticks add nothing. */
export function deduplicationId(kind: RealJobKind, resource: ResourceName | undefined): string {
  return `${kind}:${resource ?? 'all'}`;
}

/** Where a connection says it lost Redis and got it back (pino's Logger fits). */
export interface RedisLog {
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
}

export interface OpenRedisOptions {
  /**
   * SALESYNC_REDIS_TIMEOUT: how long to wait for Redis to be ready before failing with `redis_unavailable`, and
   * how long a connection that was ready keeps trying to get it back before it gives up.
   */
  timeoutMs: number;
  /** Stop waiting on SIGINT/SIGTERM. */
  signal?: AbortSignal;
  log?: RedisLog;
  /**
   * A short command's connection: a command sent while Redis is away fails after one retry instead of waiting
   * for it. @defaultValue false: commands wait (`maxRetriesPerRequest: null`, what a BullMQ Worker needs)
   */
  brief?: boolean;
  /**
   * Called when the connection, after it was ready, has been down `timeoutMs` and gives up (`redis_unavailable`):
   * every command waiting on it has failed, and its owner stops (a worker exits, for its supervisor to restart it).
   * May be called more than once (BullMQ's copies of the connection give up too). @defaultValue none
   */
  onLost?: (failure: SalesyncError) => void;
}

/**
 * A connection that is ready, or `redis_unavailable` within `timeoutMs` (at once for a refused password): what
 * every command and the worker open, and the only way salesync connects. Once ready, it rides out a Redis that
 * comes back within `timeoutMs` and gives up on one that does not (boundedRetryStrategy), never retrying for ever.
 */
export async function openRedis(url: string, options: OpenRedisOptions): Promise<Redis> {
  redisAddress(url); // a malformed REDIS_URL is a configuration error, before any attempt
  const connectTimeout = Math.min(options.timeoutMs, 10_000);
  let ready = false;
  let lastError: unknown = null;
  // Before it is ready, waitForRedis reports the failure; after, the owner hears it through onLost.
  const retryStrategy = boundedRetryStrategy(options.timeoutMs, (downForMs) => {
    if (!ready) return;
    const reason = lastError ? redisFailureReason(lastError) : 'it closed the connection';
    options.onLost?.(redisUnavailable(url, `lost the connection, then ${reason}`, downForMs));
  });
  // A socket that never opened must not hold a failed command's exit for ioredis's default 2 s.
  const disconnectTimeout = 200;
  // Silent until ready: a Redis that never answers is reported once, by the failure, not by a warning per attempt.
  const client = reportErrors(
    new Redis(url, { maxRetriesPerRequest: options.brief ? 1 : null, connectTimeout, disconnectTimeout, retryStrategy }),
    undefined,
  );
  client.on('error', (error: Error) => (lastError = error));
  await waitForRedis(client, url, { timeoutMs: options.timeoutMs, ...(options.signal ? { signal: options.signal } : {}) });
  ready = true;
  return reportErrors(client, options.log);
}

/**
 * ioredis prints an error event nobody listens to on stderr ("[ioredis] Unhandled error event: ..."), which would
 * break the one-line failure a run promises. It reconnects by itself and the commands waiting on it fail or
 * succeed on their own, so the connection only says, once per outage, that Redis went away and came back.
 */
function reportErrors(client: Redis, log: RedisLog | undefined): Redis {
  let down = false;
  client.on('error', (error: Error) => {
    if (!down) log?.warn({ err: error.message }, 'lost the connection to Redis; reconnecting');
    down = true;
  });
  client.on('ready', () => {
    if (down) log?.info({}, 'connected to Redis again');
    down = false;
  });
  return client;
}

export function openQueue(connection: Redis, prefix: string): Queue {
  const queue = new Queue(QUEUE_NAME, { connection, prefix, defaultJobOptions: JOB_DEFAULTS });
  // Its errors are its connection's, reported there; without a listener BullMQ prints them raw on stderr.
  queue.on('error', () => undefined);
  return queue;
}

/** Lease keys are per warehouse file: two warehouses (two organizations) never wait for each other. */
export function warehouseId(warehousePath: string): string {
  return createHash('sha256').update(resolve(warehousePath)).digest('hex').slice(0, 16);
}

export function warehouseLeaseKey(prefix: string, warehousePath: string): string {
  return `${prefix}:lease:warehouse:${warehouseId(warehousePath)}`;
}

export function resourceLeaseKey(prefix: string, warehousePath: string, resource: ResourceName): string {
  return `${prefix}:lease:walk:${warehouseId(warehousePath)}:${resource}`;
}
