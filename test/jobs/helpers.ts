import { spawn, type ChildProcess } from 'node:child_process';
import type { Queue } from 'bullmq';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../../src/core/paths.js';
import { DEFAULT_KEYS } from '../../src/simulator/index.js';
import { freePort } from '../support/ports.js';

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

/** A worker's dashboard and metrics ports. */
export interface WorkerPorts {
  dashboardPort: number;
  metricsPort: number;
}

/**
 * `salesync worker` on two ports nothing listened on a moment before, once it says it started. A port is free
 * only until someone binds it: another process (a test beside this one, an outgoing connection's local port) may
 * take it before the worker does, which the worker refuses as port_in_use; then it starts again on two others.
 */
export async function startWorkerOnFreePorts(
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ worker: CliProcess } & WorkerPorts> {
  for (let attempt = 1; ; attempt += 1) {
    const ports = { dashboardPort: await freePort(), metricsPort: await freePort() };
    const worker = startCli(['worker'], {
      ...env,
      SALESYNC_DASHBOARD_PORT: String(ports.dashboardPort),
      SALESYNC_METRICS_PORT: String(ports.metricsPort),
    });
    const output = await waitFor(
      async () => worker.output(),
      (o) => o.includes('worker started') || o.includes('port_in_use'),
      timeoutMs,
      'the worker to start',
    );
    if (!output.includes('port_in_use') || attempt === 3) return { worker, ...ports };
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
}

/** Jobs not finished yet: waiting, running or delayed (schedulers' next ticks excluded by the caller's choice of queue). */
export async function pendingJobs(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
}
