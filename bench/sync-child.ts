// One sync in its own process, reporting what it cost: the peak RSS of this process is the sync's alone.
// Reads the service address, key and warehouse from the environment like the CLI; prints one JSON line.
import { readFileSync, writeFileSync } from 'node:fs';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { RESOURCE_NAMES } from '../src/core/resources.js';
import { walkLength } from '../devtools/walk-schedule.js';
import { createSyncEnvironment, runSync } from '../src/sync/index.js';
import type { PeakParts } from './processes.js';
import { limitHeapGrowth } from '../src/heap-growth.js';

/** The RSS of mapped files (`RssFile` in /proc/self/status), in MB; null where the OS has no such file. */
function rssFileMb(): number | null {
  try {
    const kb = /^RssFile:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
}

// As the CLI sets it before a command runs.
limitHeapGrowth();
const config = loadConfig(process.env);
const env = createSyncEnvironment(config, { logger: pino({ level: 'warn' }) });
const started = performance.now();
const cpuAtStart = process.cpuUsage();
// Peak JS heap beside peak RSS: what the sync holds, as opposed to DuckDB's native memory. And what the RSS was made
// of at its highest sample: the mapped files (code), V8's heap, Node's external memory; the rest is DuckDB's,
// glibc's and the threads' stacks.
let maxHeapMb = 0;
let atPeak: PeakParts | null = null;
// `npm run bench -- --rss-series <dir>`: every sample kept, often enough to see one commit's rise and fall.
const seriesFile = process.env.BENCH_RSS_SERIES;
const series: string[] = ['ms\trss_mb\theap_mb'];
const sampler = setInterval(
  () => {
    const usage = process.memoryUsage();
    if (seriesFile)
      series.push(
        `${Math.round(performance.now() - started)}\t${(usage.rss / 2 ** 20).toFixed(1)}\t${(usage.heapUsed / 2 ** 20).toFixed(1)}`,
      );
    maxHeapMb = Math.max(maxHeapMb, usage.heapUsed / 2 ** 20);
    const rssMb = usage.rss / 2 ** 20;
    if (atPeak === null || rssMb > atPeak.rssMb) {
      atPeak = { rssMb, fileMb: rssFileMb(), v8HeapMb: usage.heapTotal / 2 ** 20, externalMb: usage.external / 2 ** 20 };
    }
  },
  seriesFile ? 5 : 100,
);
// The old space right after each full collection: what the sync keeps alive, where the peak above also holds
// garbage V8 has not collected yet.
let liveOldSpaceMb = 0;
const collections = new PerformanceObserver((list) => {
  if (!list.getEntries().some((e) => (e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR))
    return;
  const old = getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
  if (old) liveOldSpaceMb = Math.max(liveOldSpaceMb, old.space_used_size / 2 ** 20);
});
collections.observe({ entryTypes: ['gc'] });
const report = await runSync(env.deps, env.settings, {
  resources: RESOURCE_NAMES,
  mode: 'incremental',
  concurrency: config.resourceConcurrency,
});
await env.close();
clearInterval(sampler);
if (seriesFile) writeFileSync(seriesFile, `${series.join('\n')}\n`);
collections.disconnect();
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
    liveOldSpaceMb,
    atPeak,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    errors: report.results.filter((r) => r.error).map((r) => `${r.resource}: ${r.error?.code} ${r.error?.message}`),
  })}\n`,
);
