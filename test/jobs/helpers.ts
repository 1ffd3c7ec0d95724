import { spawn, type ChildProcess } from 'node:child_process';
import type { Queue } from 'bullmq';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../../src/core/paths.js';
import { DEFAULT_KEYS } from '../../src/simulator/index.js';

const cli = join(projectRoot(import.meta.url), 'dist/src/cli/main.js');

/** The environment of a spawned CLI: this simulator, this warehouse, this Redis and prefix, nothing inherited. */
export function cliEnv(
  url: string,
  warehouse: string,
  redisUrl: string,
  prefix: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    SALES_API_BASE_URL: url,
    SALES_API_KEY: DEFAULT_KEYS.read,
    WAREHOUSE_PATH: warehouse,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: prefix,
    LOG_LEVEL: 'info',
    SALESYNC_DASHBOARD_PORT: '0',
    SALESYNC_METRICS_PORT: '0',
    ...extra,
  };
}

export interface CliProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Start the built CLI (`npm test` builds first). */
export function startCli(args: string[], env: Record<string, string>): CliProcess {
  const child = spawn(process.execPath, [cli, '--no-progress', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

export async function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const p = startCli(args, env);
  const code = await p.exited;
  return { code, output: p.output() };
}

export async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  what = 'a condition',
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value ${JSON.stringify(value)}`);
    await sleep(intervalMs);
  }
}

/** Jobs not finished yet: waiting, running or delayed (schedulers' next ticks excluded by the caller's choice of queue). */
export async function pendingJobs(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
}
