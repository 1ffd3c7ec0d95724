import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveDashboard, type Served } from '../../jobs/dashboard.js';
import { openQueue } from '../../jobs/queue.js';
import { dashboardOptions } from '../../jobs/worker.js';
import { loadConfig } from '../../src/config.js';
import { startHarness, type Harness } from '../support/harness.js';
import { useTestRedis } from '../support/use-redis.js';
import { cliEnv, startWorkerOnFreePorts, waitFor } from './helpers.js';

/** Issue 20, part 2: safe by default. Loopback only, read-only, and a login when one is configured. */
const redis = useTestRedis();
let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({
    seed: 2301,
    size: { deals: 30, companies: 5, contacts: 5, meetingLogs: 2, contactActivities: 2, users: 2 },
  });
});
afterAll(async () => {
  await harness?.close();
});

/** `/proc/net/tcp` address `0100007F:0BB8` → `127.0.0.1`; tcp6 → the 16 bytes as an IPv6 string. */
function decodeAddress(hex: string): string {
  if (hex.length === 8) return [3, 2, 1, 0].map((i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join('.');
  const words = [];
  for (let w = 0; w < 4; w++) {
    const word = hex.slice(w * 8, w * 8 + 8);
    const bytes = [3, 2, 1, 0].map((i) => word.slice(i * 2, i * 2 + 2)).join('');
    words.push(bytes.slice(0, 4), bytes.slice(4, 8));
  }
  return words.map((x) => parseInt(x, 16).toString(16)).join(':');
}

/** Every address a process listens on (Linux: its socket inodes matched against /proc/net/tcp and tcp6). */
function listeningAddresses(pid: number): Array<{ address: string; port: number }> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const found: Array<{ address: string; port: number }> = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '0A' || !inodes.has(fields[9]!)) continue; // 0A: LISTEN
      const [address, port] = fields[1]!.split(':') as [string, string];
      found.push({ address: decodeAddress(address), port: parseInt(port, 16) });
    }
  }
  return found;
}

describe('safe by default', () => {
  it('a worker started with default flags listens on no address other than loopback, and serves the health gauges there', async () => {
    await harness.sync({ resources: ['deals'] });
    const { worker, dashboardPort, metricsPort } = await startWorkerOnFreePorts(
      cliEnv(harness.url, harness.config.warehousePath, redis.url, `${redis.prefix}-loopback`),
      30_000,
    );
    try {
      expect(worker.output()).toContain('worker started');
      const listening = listeningAddresses(worker.child.pid!);
      expect(listening.map((l) => l.port).sort()).toEqual([dashboardPort, metricsPort].sort());
      for (const { address } of listening) expect(address, JSON.stringify(listening)).toMatch(/^(127\.\d+\.\d+\.\d+|0:0:0:0:0:0:0:1)$/);
      expect(worker.output()).toMatch(/"dashboardHost":"127\.0\.0\.1"/);

      const metrics = await waitFor(
        async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(),
        (text) => /salesync_resource_rows\{resource="deals"\} 30/.test(text),
        20_000,
        'the health gauges',
      );
      expect(metrics).toMatch(/salesync_resource_age_seconds\{resource="deals"\} \d/);
      expect(metrics).toMatch(/salesync_last_run_failed\{resource="deals",mode="incremental"\} 0/);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });

  describe('bull-board', () => {
    let served: Served | undefined;
    const queue = () => openQueue(redis.connect(), `${redis.prefix}-board`);
    const start = async (options: Parameters<typeof serveDashboard>[1]) => {
      served = await serveDashboard(queue(), options);
      return `http://127.0.0.1:${served.port}`;
    };
    const stop = async () => {
      await served?.close();
      served = undefined;
    };

    it('refuses a job deletion (its API answers 405) unless write access was enabled', async () => {
      const q = queue();
      const job = await q.add('sync', { resource: 'deals', mode: 'incremental' }, { delay: 3_600_000 });
      try {
        const url = await start({ port: 0 });
        expect(served!.host).toBe('127.0.0.1');
        const { queues } = (await (await fetch(`${url}/api/queues`)).json()) as { queues: Array<{ name: string; readOnlyMode: boolean }> };
        const name = queues[0]!.name;
        expect(queues[0]!.readOnlyMode).toBe(true);
        const refused = await fetch(`${url}/api/queues/${encodeURIComponent(name)}/${job.id}/clean`, { method: 'PUT' });
        expect(refused.status).toBe(405);
        expect(await q.getJob(job.id!)).toBeDefined();
        const retry = await fetch(`${url}/api/queues/${encodeURIComponent(name)}/${job.id}/promote`, { method: 'PUT' });
        expect(retry.status).toBe(405);
        await stop();

        // SALESYNC_DASHBOARD_WRITE=true is what turns write access on.
        const writable = dashboardOptions(loadConfig({ SALESYNC_DASHBOARD_WRITE: 'true', SALESYNC_DASHBOARD_PORT: '0' }));
        expect(writable).toMatchObject({ write: true, host: '127.0.0.1' });
        const writeUrl = await start(writable);
        const removed = await fetch(`${writeUrl}/api/queues/${encodeURIComponent(name)}/${job.id}/clean`, { method: 'PUT' });
        expect(removed.status).toBe(204);
        expect(await q.getJob(job.id!)).toBeUndefined();
      } finally {
        await stop();
        await q.obliterate({ force: true }).catch(() => undefined);
      }
    });

    it('asks for the configured user and password (401 with WWW-Authenticate otherwise)', async () => {
      const options = dashboardOptions(
        loadConfig({ SALESYNC_DASHBOARD_USER: 'ops', SALESYNC_DASHBOARD_PASSWORD: 's3cret:with:colons', SALESYNC_DASHBOARD_PORT: '0' }),
      );
      try {
        const url = await start(options);
        const anonymous = await fetch(`${url}/`);
        expect(anonymous.status).toBe(401);
        expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic realm="salesync"/);
        const basic = (user: string, password: string) => ({
          authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
        });
        expect((await fetch(`${url}/api/queues`, { headers: basic('ops', 'wrong') })).status).toBe(401);
        expect((await fetch(`${url}/api/queues`, { headers: basic('root', 's3cret:with:colons') })).status).toBe(401);
        const ok = await fetch(`${url}/`, { headers: basic('ops', 's3cret:with:colons') });
        expect(ok.status).toBe(200);
        expect(await ok.text()).toMatch(/<html/i);
      } finally {
        await stop();
      }
    });

    it('only a user or only a password is a configuration error', () => {
      expect(() => loadConfig({ SALESYNC_DASHBOARD_USER: 'ops' })).toThrow(
        /SALESYNC_DASHBOARD_USER and SALESYNC_DASHBOARD_PASSWORD go together/,
      );
    });
  });
});
