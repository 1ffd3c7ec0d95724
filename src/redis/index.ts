/** Connections to Redis that never wait without end: bounded at start and after an outage. Imports only src/core. */
export { openRedis, type OpenRedisOptions, type RedisLog } from './open.js';
export {
  boundedRetryStrategy,
  explainRedisError,
  reconnectDelay,
  redisAddress,
  redisFailureReason,
  redisUnavailable,
  waitForRedis,
} from './connection.js';
export type { RedisOutage, WaitForRedisOptions } from './connection.js';
