import { afterAll, describe, expect, it } from 'vitest';
import { startTestRedis, type TestRedis } from './redis.js';

describe('test Redis', () => {
  let redis: TestRedis | undefined;
  afterAll(async () => redis?.stop());

  it('starts a private server (or uses REDIS_URL) and survives a restart', async () => {
    redis = await startTestRedis();
    const client = redis.connect();
    await client.set(`${redis.prefix}:k`, 'v');
    expect(await client.get(`${redis.prefix}:k`)).toBe('v');
    if (redis.owned) {
      await redis.restart();
      const again = redis.connect();
      expect(await again.ping()).toBe('PONG');
    }
  });
});
