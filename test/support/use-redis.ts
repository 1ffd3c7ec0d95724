// A vitest helper apart from redis.ts, which the bench imports outside vitest.
import { afterAll, beforeAll } from 'vitest';
import { startTestRedis, type TestRedis } from './redis.js';

/**
 * The calling test file's Redis: started before its tests (startTestRedis), stopped after them. The object
 * stands for that Redis from the start, so a file can name it at its top and use it inside its tests.
 */
export function useTestRedis(): TestRedis {
  let redis: TestRedis | undefined;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  const current = (): TestRedis => {
    if (!redis) throw new Error('the test Redis starts in beforeAll: use it inside tests and hooks, not at load time');
    return redis;
  };
  return {
    get url() {
      return current().url;
    },
    get prefix() {
      return current().prefix;
    },
    get owned() {
      return current().owned;
    },
    connect: () => current().connect(),
    restart: () => current().restart(),
    stop: () => current().stop(),
  };
}
