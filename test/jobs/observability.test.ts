import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { cliEnv, runCli, startWorkerOnFreePorts, waitFor } from './helpers.js';

let redis: TestRedis;
let harness: Harness;
beforeAll(async () => {
  redis = await startTestRedis();
  harness = await startHarness({
    seed: 61,
    size: { deals: 300, companies: 50, contacts: 50, meetingLogs: 5, contactActivities: 20, users: 5 },
  });
});
afterAll(async () => {
  await harness?.close();
  await redis?.stop();
});

describe('worker visibility', () => {
  it('serves Prometheus metrics that count the records its jobs wrote, and the bull-board dashboard', async () => {
    const env = cliEnv(harness.url, harness.config.warehousePath, redis.url, `${redis.prefix}-obs`);
    const { worker, dashboardPort, metricsPort } = await startWorkerOnFreePorts(env, 20_000);
    try {
      expect(worker.output()).toContain('worker started');
      const queued = await runCli(['backfill', 'deals'], env);
      expect(queued.code, queued.output).toBe(0);

      const metrics = await waitFor(
        async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(),
        (text) => /salesync_records_written_total\{[^}]*resource="deals"[^}]*\} 300/.test(text),
        30_000,
        'the backfill to show in the metrics',
      );
      expect(metrics).toMatch(/salesync_requests_total/);
      expect(metrics).toMatch(/salesync_run_duration_seconds/);

      const dashboard = await fetch(`http://127.0.0.1:${dashboardPort}/`);
      expect(dashboard.status).toBe(200);
      expect(await dashboard.text()).toMatch(/<html/i);
    } finally {
      worker.child.kill('SIGTERM');
      expect(await worker.exited, worker.output()).toBe(0);
    }
  });
});
