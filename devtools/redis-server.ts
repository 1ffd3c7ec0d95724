/**
 * A throwaway Redis for tests and benchmarks: a private `redis-server` when one is installed, else REDIS_URL with
 * a unique key prefix. Plain Node, no vitest: the limiter benchmark runs it outside the test runner.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { freePort } from './ports.js';

/**
 * A Redis for one test file or bench run. When `redis-server` is on PATH, a private server on a free port, so
 * nobody's data is touched; otherwise REDIS_URL with a unique key prefix; otherwise a clear failure.
 */
export interface TestRedis {
  url: string;
  /** A prefix unique to this test run: pass it to everything that names Redis keys. */
  prefix: string;
  /** True when this process owns the server (and can stop or restart it). */
  owned: boolean;
  connect(): Redis;
  /** Stop and start the owned server on the same port (to test reconnection). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function waitForPing(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    // Refused connections are expected while the server starts; connect() rejects with them anyway.
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`redis at ${url} did not answer within ${timeoutMs} ms: ${String(error)}`);
      await sleep(50);
    } finally {
      client.disconnect();
    }
  }
}

function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function startTestRedis(): Promise<TestRedis> {
  const prefix = `salesync-test-${randomUUID().slice(0, 8)}`;
  const clients: Redis[] = [];
  const connect = (url: string) => () => {
    const client = new Redis(url, { maxRetriesPerRequest: null });
    clients.push(client);
    return client;
  };
  const closeClients = () => Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));

  if (hasRedisServer()) {
    const port = await freePort();
    const dir = await mkdtemp(join(tmpdir(), 'salesync-redis-'));
    const url = `redis://127.0.0.1:${port}`;
    let child: ChildProcess | undefined;
    const start = async () => {
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
        stdio: 'ignore',
      });
      await waitForPing(url, 10_000);
    };
    const halt = async () => {
      // A killed child has a signal and no exit code: either means it is gone (a second stop() returns at once).
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    };
    await start();
    return {
      url,
      prefix,
      owned: true,
      connect: connect(url),
      restart: async () => {
        await halt();
        await start();
      },
      stop: async () => {
        await closeClients();
        await halt();
        await rm(dir, { recursive: true, force: true });
      },
    };
  }

  const url = process.env.REDIS_URL;
  if (url) {
    await waitForPing(url, 5_000);
    return {
      url,
      prefix,
      owned: false,
      connect: connect(url),
      restart: async () => {
        throw new Error('cannot restart a shared Redis (REDIS_URL); install redis-server to run this test');
      },
      stop: async () => {
        // Leave a shared server as we found it: remove only this run's keys.
        const client = new Redis(url);
        const keys = await client.keys(`${prefix}*`);
        if (keys.length > 0) await client.del(...keys);
        await client.quit();
        await closeClients();
      },
    };
  }

  throw new Error(
    'these tests need Redis: install redis-server (apt-get install redis-server) so they can start their own, ' +
      'or set REDIS_URL to a Redis they may write to (keys are prefixed and removed afterwards)',
  );
}
