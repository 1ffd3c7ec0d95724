import type { Redis } from 'ioredis';
import type { LimiterBudgetOptions } from './budget.js';
import { createRedisLimiter, type ClosableRateLimiter, type LimiterLogger } from './redis-limiter.js';
import { TokenBucketLimiter } from './token-bucket.js';

export interface LimiterOptions extends LimiterBudgetOptions {
  /** Redis key prefix of the shared buckets (ignored without Redis). @defaultValue 'salesync' */
  prefix?: string;
  logger?: LimiterLogger;
}

/**
 * The composition root's one choice: with a Redis client, the limiter every process shares; without, the
 * in-process bucket (the CLI on a laptop). The caller owns the client.
 */
export function createLimiter(options: LimiterOptions, redis: Redis | null): ClosableRateLimiter {
  if (!redis) {
    // The in-process bucket holds nothing to release: its timers end with the waits they serve.
    const bucket = new TokenBucketLimiter(options);
    return Object.assign(bucket, { close: async () => undefined });
  }
  return createRedisLimiter({ ...options, redis });
}
