export type { AcquireOptions, Grant, RateLane, RateLimiter, RateLimitObservation } from '../core/rate-limiter.js';
export { TokenBucketLimiter, unlimited, gcraParams, gcraTake, gcraWait } from './token-bucket.js';
export type { TokenBucketOptions, GcraParams, GcraState } from './token-bucket.js';
