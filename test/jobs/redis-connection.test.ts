import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { boundedRetryStrategy, explainRedisError, reconnectDelay, redisAddress } from '../../src/redis/index.js';
import { openRedis } from '../../src/redis/index.js';
import { ConfigError, SalesyncError } from '../../src/core/errors.js';
import { freePort } from '../support/ports.js';
import { useTestRedis } from '../support/use-redis.js';

const redis = useTestRedis();

describe('bounded connections to Redis', () => {
  it('name where they go without the user or password', () => {
    expect(redisAddress('redis://alice:s3cret@cache.internal:6380/2')).toBe('redis://cache.internal:6380');
    expect(redisAddress('rediss://:s3cret@cache.internal')).toBe('rediss://cache.internal:6379');
    expect(() => redisAddress('cache.internal:6379')).toThrow(ConfigError);
    try {
      redisAddress('http://user:s3cret@x');
    } catch (error) {
      expect((error as Error).message).not.toContain('s3cret');
    }
  });

  it('open a connection that is ready, and reject with redis_unavailable within the timeout otherwise', async () => {
    const client = await openRedis(redis.url, { timeoutMs: 5000 });
    expect(await client.ping()).toBe('PONG');
    await client.quit();

    const started = Date.now();
    const failure = await openRedis('redis://127.0.0.1:1', { timeoutMs: 800 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SalesyncError);
    expect((failure as SalesyncError).code).toBe('redis_unavailable');
    expect((failure as SalesyncError).message).toMatch(/^could not reach Redis at redis:\/\/127\.0\.0\.1:1 \(connection refused/);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('stop waiting when the command is told to stop', async () => {
    const controller = new AbortController();
    const waiting = openRedis('redis://127.0.0.1:1', { timeoutMs: 60_000, signal: controller.signal }).catch((error: unknown) => error);
    setTimeout(() => controller.abort(new Error('received SIGTERM')), 200);
    expect(((await waiting) as Error).message).toBe('received SIGTERM');
  });

  it('explain a raw ioredis failure as redis_unavailable, and leave other errors alone', () => {
    const raw = Object.assign(new Error('Reached the max retries per request limit (which is 1).'), { name: 'MaxRetriesPerRequestError' });
    expect(explainRedisError(raw, 'redis://:pw@h:6379')?.message).toMatch(/^could not reach Redis at redis:\/\/h:6379 \(/);
    expect(explainRedisError(new Error('something else'), 'redis://h:6379')).toBeNull();
    expect(explainRedisError(new SalesyncError('unauthorized', 'x'), 'redis://h:6379')).toBeNull();
  });
});

describe('the reconnection policy of a connection that lost Redis', () => {
  /** Attempt `attempt` of an outage `downForMs` old, under a 10 s SALESYNC_REDIS_TIMEOUT. */
  const delay = (attempt: number, downForMs: number) =>
    reconnectDelay({ attempt, downSince: 50_000, now: 50_000 + downForMs, timeoutMs: 10_000 });

  it('keeps trying within SALESYNC_REDIS_TIMEOUT, pausing longer each attempt up to a second, never past the deadline', () => {
    expect(delay(1, 0)).toBe(200);
    expect(delay(3, 900)).toBe(600);
    expect(delay(40, 5_000)).toBe(1000);
    expect(delay(40, 9_700)).toBe(300);
    expect(delay(40, 9_999)).toBe(1);
  });

  it('gives up once Redis has been away the whole timeout', () => {
    expect(delay(41, 10_000)).toBeNull();
    expect(delay(2, 60_000)).toBeNull();
  });

  it('counts each outage from its first attempt: a blip that recovered leaves the next outage its whole timeout', () => {
    let now = 0;
    const gaveUp: number[] = [];
    const retry = boundedRetryStrategy(
      1000,
      (downForMs) => gaveUp.push(downForMs),
      () => now,
    );
    expect(retry(1)).toBe(200);
    now = 300;
    expect(retry(2)).toBe(400); // then it came back: ioredis counts from 1 again
    now = 60_000;
    expect(retry(1)).toBe(200);
    now = 60_900;
    expect(retry(5)).toBe(100);
    expect(gaveUp).toEqual([]);
    now = 61_000;
    expect(retry(6)).toBeNull();
    expect(gaveUp).toEqual([1000]);
  });
});

/** A redis-server of one test's own on a fixed port: stopped and started again at will (a blip as long as it likes). */
async function redisServerOfOurOwn(): Promise<{ url: string; start(): Promise<void>; stop(): Promise<void> }> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (let tries = 0; ; tries += 1) {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        return;
      } catch (error) {
        if (tries > 200) throw error;
        await sleep(50);
      } finally {
        probe.disconnect();
      }
    }
  };
  const stop = async () => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  return { url, start, stop };
}

describe('a connection that was ready', () => {
  it('rides out a Redis away for less than SALESYNC_REDIS_TIMEOUT, saying so once in the log, and gives up on one that stays away: waiting commands fail, its owner hears redis_unavailable', async () => {
    const server = await redisServerOfOurOwn();
    const warnings: string[] = [];
    const infos: string[] = [];
    const log = { warn: (_: object, message: string) => warnings.push(message), info: (_: object, message: string) => infos.push(message) };
    const lost: SalesyncError[] = [];
    const client = await openRedis(server.url, { timeoutMs: 3000, log, onLost: (failure) => lost.push(failure) });
    try {
      // An 'error' event nobody listens to is what ioredis prints raw on stderr.
      expect(client.listenerCount('error')).toBeGreaterThan(0);
      // A blip: away for about a second, refusing each attempt meanwhile.
      await server.stop();
      await sleep(1000);
      await server.start();
      expect(await client.ping()).toBe('PONG');
      expect(lost).toEqual([]);
      expect(warnings).toEqual(['lost the connection to Redis; reconnecting']);
      expect(infos).toEqual(['connected to Redis again']);

      // Gone for good.
      const stoppedAt = Date.now();
      await server.stop();
      // Sent while it reconnects: it waits (as a worker's commands do), then fails when the connection gives up.
      const failure = await client.get('anything').catch((error: unknown) => error);
      const waited = Date.now() - stoppedAt;
      expect((failure as Error).message).toMatch(/Connection is closed/);
      expect(waited).toBeGreaterThanOrEqual(3000);
      expect(waited).toBeLessThan(8000);
      expect(client.status).toBe('end');
      expect(lost.length).toBeGreaterThan(0);
      expect(lost[0]!.code).toBe('redis_unavailable');
      expect(lost[0]!.message).toMatch(
        new RegExp(
          `^could not reach Redis at ${server.url.replace(/[.]/g, '\\.')} \\(lost the connection, then connection refused: .+; gave up after [0-9.]+s \\(SALESYNC_REDIS_TIMEOUT\\)\\)$`,
        ),
      );
    } finally {
      client.disconnect();
      await server.stop();
    }
  }, 30_000);
});
