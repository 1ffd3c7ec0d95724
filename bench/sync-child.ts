// One sync in its own process, reporting what it cost: the peak RSS of this process is the sync's alone.
// Reads the service address, key and warehouse from the environment like the CLI; prints one JSON line.
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { RESOURCE_NAMES } from '../src/core/resources.js';
import { walkLength } from '../devtools/walk-schedule.js';
import { createSyncEnvironment, runSync } from '../src/sync/index.js';

const config = loadConfig(process.env);
const env = createSyncEnvironment(config, { logger: pino({ level: 'warn' }) });
const started = performance.now();
const cpuAtStart = process.cpuUsage();
// Peak JS heap beside peak RSS: what the sync holds, as opposed to DuckDB's native memory.
let maxHeapMb = 0;
const sampler = setInterval(() => {
  maxHeapMb = Math.max(maxHeapMb, process.memoryUsage().heapUsed / 2 ** 20);
}, 100);
const report = await runSync(env.deps, env.settings, {
  resources: RESOURCE_NAMES,
  mode: 'incremental',
  concurrency: config.resourceConcurrency,
});
await env.close();
clearInterval(sampler);
const elapsedMs = performance.now() - started;
// This process's CPU (all its threads, DuckDB's included), in microseconds: the sync's cost beside its wall time.
const cpu = process.cpuUsage(cpuAtStart);
process.stdout.write(
  `${JSON.stringify({
    ok: report.ok,
    requests: report.requests,
    // Each walk on its lane: its list pages in a chain, its single-record GETs (and the summaries' after the
    // meeting logs) SALESYNC_DETAIL_CONCURRENCY at a time.
    walks: report.results.map((r) => {
      const requests = r.requests + (r.resource === 'meeting-logs' ? (report.summaries?.requests ?? 0) : 0);
      return { requests, length: walkLength(requests, r.pages, config.detailConcurrency) };
    }),
    records: report.results.reduce((sum, r) => sum + r.written, 0),
    elapsedMs,
    // resourceUsage().maxRSS is in kilobytes.
    maxRssMb: process.resourceUsage().maxRSS / 1024,
    maxHeapMb,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    errors: report.results.filter((r) => r.error).map((r) => `${r.resource}: ${r.error?.code}`),
  })}\n`,
);
