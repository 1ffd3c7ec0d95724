/**
 * One load process for the limiter benchmark and the cross-process acceptance test: loops cheap list requests
 * (`GET /v1/deals/?page_size=1`) through createSalesApi and the chosen limiter for a fixed time, in one rate
 * lane (the schedule's unless told), recording when each token was granted and each pause asked for, then
 * prints one JSON line (WorkerReport) on stdout.
 *
 *   node dist/devtools/limiter-worker.js '<WorkerSpec as JSON>'
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createSalesApi } from '../src/api/index.js';
import type { RequestStats } from '../src/api/types.js';
import type { RateLane, RateLimiter } from '../src/core/rate-limiter.js';
import { createLimiter, type LaneShares } from '../src/limiter/index.js';

export interface WorkerSpec {
  baseUrl: string;
  apiKeys: string[];
  /** Null: the in-process token bucket. */
  redisUrl: string | null;
  prefix: string;
  perKeyPerMinute: number;
  perOrgPerMinute: number;
  /** Epoch ms at which to start (lets processes begin together, or staggered on purpose). */
  startAt: number;
  /** Epoch ms at which to stop taking tokens. */
  stopAt: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** The lane every request spends. @defaultValue 'sync' */
  lane?: RateLane;
  /** The lanes' shares, as SALESYNC_BACKFILL_SHARE / SALESYNC_SUMMARIES_SHARE set them. @defaultValue the limiter's */
  laneShares?: Partial<LaneShares>;
}

export interface WorkerReport {
  pid: number;
  /** Epoch ms of every granted token. */
  grants: number[];
  /** Every pause the client asked the limiter for (a 429): when, and for how long. */
  pauses: Array<{ at: number; ms: number }>;
  stats: RequestStats;
  /** Requests that failed for good, by error code. */
  errors: Record<string, number>;
}

export async function runWorker(spec: WorkerSpec): Promise<WorkerReport> {
  const redis = spec.redisUrl ? new Redis(spec.redisUrl, { maxRetriesPerRequest: null }) : null;
  const inner = createLimiter(
    {
      perKeyPerMinute: spec.perKeyPerMinute,
      perOrgPerMinute: spec.perOrgPerMinute,
      prefix: spec.prefix,
      ...(spec.laneShares ? { laneShares: spec.laneShares } : {}),
    },
    redis,
  );
  const grants: number[] = [];
  const pauses: Array<{ at: number; ms: number }> = [];
  const limiter: RateLimiter = {
    acquire: async (keyIds, options) => {
      const grant = await inner.acquire(keyIds, options);
      grants.push(Date.now());
      return grant;
    },
    observe: (keyId, observation) => inner.observe(keyId, observation),
    pause: (keyId, ms) => {
      pauses.push({ at: Date.now(), ms });
      inner.pause(keyId, ms);
    },
  };
  const api = createSalesApi({
    baseUrl: spec.baseUrl,
    apiKeys: spec.apiKeys,
    limiter,
    ...(spec.lane ? { lane: spec.lane } : {}),
    logger: pino({ level: 'silent' }),
    retry: { limit: 5, baseDelayMs: 100 },
  });

  await new Promise((resolve) => setTimeout(resolve, Math.max(0, spec.startAt - Date.now())));
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(new Error('time is up')), Math.max(0, spec.stopAt - Date.now()));
  const errors: Record<string, number> = {};
  const loop = async () => {
    while (!stop.signal.aborted) {
      try {
        await api.listPage('deals', { pageSize: 1, signal: stop.signal });
      } catch (error) {
        if (stop.signal.aborted) return;
        const code = (error as { code?: string }).code ?? 'unknown';
        errors[code] = (errors[code] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, loop));
  clearTimeout(timer);
  await inner.close?.();
  await redis?.quit();
  return { pid: process.pid, grants, pauses, stats: api.stats(), errors };
}

/**
 * Runs one worker in its own Node process (from the build: `dist/devtools/limiter-worker.js`) and resolves with its
 * report. Works from the TypeScript source under vitest too, by pointing at the built file.
 */
export function spawnLimiterWorker(spec: WorkerSpec): Promise<WorkerReport> {
  const here = fileURLToPath(import.meta.url);
  const script = here.endsWith('.js') ? here : resolve(here, '../../dist/devtools/limiter-worker.js');
  if (!existsSync(script)) throw new Error(`${script} is missing: run \`npm run build\` first`);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [script, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line) reject(new Error(`limiter worker exited with ${code}: ${err.trim() || out.trim()}`));
      else resolvePromise(JSON.parse(line) as WorkerReport);
    });
  });
}

// Run as a script (not when imported for its types).
if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const spec = JSON.parse(process.argv[2] ?? '{}') as WorkerSpec;
  runWorker(spec).then(
    (report) => process.stdout.write(`${JSON.stringify(report)}\n`),
    (error: unknown) => {
      process.stderr.write(`limiter worker failed: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
