import type { Redis } from 'ioredis';
import type { RateLimiter } from '../core/rate-limiter.js';
import type { LimiterBudgetOptions } from './budget.js';
import { createRedisLimiter, type LimiterLogger } from './redis-limiter.js';
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
export function createLimiter(options: LimiterOptions, redis: Redis | null): RateLimiter {
  if (!redis) return new TokenBucketLimiter(options);
  return createRedisLimiter({ ...options, redis });
}
