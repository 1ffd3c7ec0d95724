import { ConfigError } from '../../core/errors.js';
import { runWorker } from '../../../jobs/index.js';
import type { CliRuntime } from '../runtime.js';

/** `salesync worker`: run jobs until SIGTERM/SIGINT (then exit 0 once the walks have committed what they hold). */
export async function workerCommand(runtime: CliRuntime): Promise<void> {
  const { config } = runtime;
  if (!config.redisUrl) {
    throw new ConfigError(
      'missing_redis_url',
      'REDIS_URL is not set: the worker takes its jobs from Redis (e.g. REDIS_URL=redis://localhost:6379)',
    );
  }
  try {
    await runWorker({ config: { ...config, redisUrl: config.redisUrl }, logger: runtime.logger, signal: runtime.signal });
  } finally {
    // Everything of ours is closed and released by now, but a BullMQ close that never completed (after a Redis
    // restart) leaves its timers running for good: they must not keep a stopped worker's process alive.
    setTimeout(() => process.exit(), 2000).unref();
  }
}
