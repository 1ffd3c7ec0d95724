import type { Redis } from 'ioredis';
import { ConfigError, SalesyncError } from '../core/errors.js';

/**
 * Bounded waits on Redis. ioredis retries a refused connection, and a wrong password, for ever: a command that
 * meets a Redis it cannot use must say so within SALESYNC_REDIS_TIMEOUT, in one line naming where it looked
 * (never the password), instead of waiting until someone notices.
 */

/** Where a connection goes, fit to print: `redis://host:port` (or `rediss://`), never the user or password. */
export function redisAddress(url: string): string {
  const parsed = parseRedisUrl(url);
  return `${parsed.protocol}//${parsed.hostname}:${parsed.port || '6379'}`;
}

function parseRedisUrl(url: string): URL {
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  if (!parsed || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || !parsed.hostname) {
    // The value is not echoed: a mistyped URL may still hold a password.
    throw new ConfigError('invalid_config', 'REDIS_URL must look like redis://[user:password@]host:6379[/db] (or rediss:// for TLS)', {
      name: 'REDIS_URL',
    });
  }
  return parsed;
}

/** Why Redis could not be used, in the words an operator acts on. */
export function redisFailureReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (/WRONGPASS|invalid password|invalid username-password/i.test(message))
    return 'it refused the user or password in REDIS_URL: check them';
  if (/NOAUTH|requires? (a )?password|Authentication required/i.test(message))
    return 'it asks for a password: put it in REDIS_URL (redis://:password@host:port)';
  if (code === 'ECONNREFUSED') return 'connection refused: is Redis running there, and are the host and port in REDIS_URL right?';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'no such host: check the host name in REDIS_URL';
  if (code === 'ETIMEDOUT' || /timed? ?out/i.test(message))
    return 'no answer: check REDIS_URL, and that a firewall lets this host reach it';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'host unreachable from here: check REDIS_URL and the network';
  if (/RESP|protocol/i.test(message)) return 'what answers there does not speak Redis: check the port in REDIS_URL';
  return `${message.split('\n')[0]}: check REDIS_URL and that Redis is up`;
}

/** A credential Redis refused: waiting longer will not help. */
function isAuthFailure(error: unknown): boolean {
  return /WRONGPASS|NOAUTH|invalid password|invalid username-password/i.test(error instanceof Error ? error.message : String(error));
}

/** The one failure every command reports for a Redis it cannot use (exit 1: not configuration, it may come back). */
export function redisUnavailable(url: string, reason: string, waitedMs?: number): SalesyncError {
  const waited = waitedMs === undefined ? '' : `; gave up after ${formatSeconds(waitedMs)} (SALESYNC_REDIS_TIMEOUT)`;
  return new SalesyncError('redis_unavailable', `could not reach Redis at ${redisAddress(url)} (${reason}${waited})`, {
    disposition: 'retriable',
    context: { redis: redisAddress(url) },
  });
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}

/**
 * A raw error from ioredis or BullMQ (a command sent through a connection that gave up), as `redis_unavailable`;
 * null for anything else. The last line of defence for connections made without `waitForRedis`.
 */
export function explainRedisError(error: unknown, url: string): SalesyncError | null {
  if (error instanceof SalesyncError || !(error instanceof Error)) return null;
  const code = (error as { code?: unknown }).code;
  const fromRedis =
    error.name === 'MaxRetriesPerRequestError' ||
    error.name === 'ReplyError' ||
    /Connection is closed|Reached the max retries per request|Stream isn't writeable|WRONGPASS|NOAUTH/i.test(error.message) ||
    (typeof code === 'string' && /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ECONNRESET)$/.test(code));
  if (!fromRedis) return null;
  try {
    return redisUnavailable(url, redisFailureReason(error));
  } catch {
    return null;
  }
}

/** Pauses between reconnection attempts: quick to catch a restart, then one a second. */
const RECONNECT_STEP_MS = 200;
const RECONNECT_MAX_MS = 1000;

/** An outage of one connection, as its reconnection policy sees it. */
export interface RedisOutage {
  /** 1 for the first attempt after the connection dropped (or failed to open). */
  attempt: number;
  /** Epoch ms when it dropped. */
  downSince: number;
  now: number;
  /** SALESYNC_REDIS_TIMEOUT. */
  timeoutMs: number;
}

/**
 * The reconnection policy of every connection salesync opens: the pause before the next attempt, or null to give
 * up once Redis has been away `timeoutMs`. A restart within the timeout is ridden out; a Redis that stays away
 * ends the connection, and with it every command waiting on it, instead of a retry for ever. Pure.
 */
export function reconnectDelay(outage: RedisOutage): number | null {
  const left = outage.timeoutMs - (outage.now - outage.downSince);
  if (left <= 0) return null;
  return Math.min(outage.attempt * RECONNECT_STEP_MS, RECONNECT_MAX_MS, left);
}

/**
 * `reconnectDelay` as ioredis's `retryStrategy`, with the clock of the outage under way: ioredis counts attempts
 * from 1 again after each ready connection, so attempt 1 starts an outage. BullMQ's copies of a connection share
 * the function; an attempt 1 of any copy restarts the clock, which can make one give up later, never sooner.
 * `onGiveUp` hears how long Redis had been away when it gives up.
 */
export function boundedRetryStrategy(
  timeoutMs: number,
  onGiveUp?: (downForMs: number) => void,
  clock: () => number = Date.now,
): (attempt: number) => number | null {
  let downSince = clock();
  return (attempt) => {
    const now = clock();
    if (attempt === 1) downSince = now;
    const delay = reconnectDelay({ attempt, downSince, now, timeoutMs });
    if (delay === null) onGiveUp?.(now - downSince);
    return delay;
  };
}

export interface WaitForRedisOptions {
  /** SALESYNC_REDIS_TIMEOUT. */
  timeoutMs: number;
  /** Stop waiting (SIGINT/SIGTERM): rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Resolve once `client` is ready; otherwise disconnect it and reject with `redis_unavailable` after `timeoutMs`
 * (at once for a refused password). The client keeps its own reconnection policy once it has been ready: a
 * worker rides out a Redis restart (and, with openRedis's policy, ends on a Redis that stays away), but never
 * starts against a Redis it cannot reach.
 */
export function waitForRedis(client: Redis, url: string, options: WaitForRedisOptions): Promise<Redis> {
  if (client.status === 'ready') return Promise.resolve(client);
  return new Promise<Redis>((resolve, reject) => {
    let lastError: unknown = null;
    const started = Date.now();
    const settle = (error: unknown | null) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('error', onError);
      client.off('end', onEnd);
      options.signal?.removeEventListener('abort', onAbort);
      if (error === null) return resolve(client);
      client.disconnect();
      reject(error);
    };
    const onReady = () => settle(null);
    const onError = (error: unknown) => {
      lastError = error;
      if (isAuthFailure(error)) settle(redisUnavailable(url, redisFailureReason(error)));
    };
    // The client's own retry policy gave up (boundedRetryStrategy's does after `timeoutMs`).
    const onEnd = () =>
      settle(redisUnavailable(url, lastError ? redisFailureReason(lastError) : 'the connection closed', Date.now() - started));
    const onAbort = () => settle(options.signal?.reason ?? new Error('aborted'));
    const timer = setTimeout(
      () =>
        settle(
          redisUnavailable(
            url,
            lastError ? redisFailureReason(lastError) : 'no answer: is it Redis, and does a firewall let this host reach it?',
            options.timeoutMs,
          ),
        ),
      options.timeoutMs,
    );
    client.on('ready', onReady);
    client.on('error', onError);
    client.once('end', onEnd);
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
