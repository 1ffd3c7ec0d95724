import { Redis } from 'ioredis';
import type { SalesyncError } from '../core/errors.js';
import { boundedRetryStrategy, redisAddress, redisFailureReason, redisUnavailable, waitForRedis } from './connection.js';

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
  watchAnswers(client, options.timeoutMs, (silentForMs) => {
    options.onLost?.(redisUnavailable(url, 'it stopped answering', silentForMs));
  });
  return reportErrors(client, options.log);
}

/**
 * A Redis that keeps the connection open and stops answering (a stopped process, a stalled host) closes no socket,
 * so neither the retry strategy nor any command gives up: every caller would wait without end. A PING while the
 * connection is ready finds it; after `timeoutMs` without an answer the connection is closed (every command
 * waiting on it fails, as `redis_unavailable` once explained) and `onStalled` is told.
 */
function watchAnswers(client: Redis, timeoutMs: number, onStalled: (silentForMs: number) => void): void {
  let answeredAt = Date.now();
  let asking = false;
  const timer = setInterval(
    () => {
      // Reconnecting is the retry strategy's to bound; the clock starts again once the connection is ready.
      if (client.status !== 'ready') {
        answeredAt = Date.now();
        return;
      }
      const silentFor = Date.now() - answeredAt;
      if (silentFor >= timeoutMs) {
        clearInterval(timer);
        client.disconnect();
        onStalled(silentFor);
        return;
      }
      if (asking) return;
      asking = true;
      client.ping().then(
        () => {
          answeredAt = Date.now();
          asking = false;
        },
        () => (asking = false),
      );
    },
    Math.max(100, Math.min(timeoutMs / 4, 5_000)),
  );
  timer.unref();
  client.once('end', () => clearInterval(timer));
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
