import { describe, expect, it } from 'vitest';
import { openRedis } from '../../jobs/queue.js';
import { explainRedisError, redisAddress } from '../../jobs/redis-connection.js';
import { ConfigError, SalesyncError } from '../../src/core/errors.js';
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
