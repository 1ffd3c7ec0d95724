import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RateLimiter } from '../src/core/rate-limiter.js';
import type { ResourceName } from '../src/core/resources.js';
import { parseInstantMicros } from '../src/core/time.js';
import { registerHealthGauges, type HealthGauges } from '../src/status/health-metrics.js';
import type { ResourceResult } from '../src/sync/index.js';

/**
 * A worker's Prometheus metrics, in a registry of its own (never prom-client's global default, so two workers
 * in one process, or a test, never share counters). Fed from the ResourceResults the walks return.
 */
export interface WorkerMetrics {
  readonly registry: Registry;
  /** Count one finished walk (sync, backfill, reconcile) of a resource. */
  recordResult(kind: string, result: MeteredResult): void;
  /** Wrap a limiter so the time spent waiting for tokens is counted. */
  meter(limiter: RateLimiter): RateLimiter;
  /** The warehouse's health (freshness, quarantine, last runs), the same gauges a CLI run writes to its textfile. */
  readonly health: HealthGauges;
}

/** The part of a walk's result the metrics read (every job kind reports at least this). */
export type MeteredResult = Pick<ResourceResult, 'resource' | 'outcome' | 'written' | 'requests' | 'rateLimited' | 'durationMs'> & {
  watermark?: string | null;
};

export function createWorkerMetrics(now: () => number = Date.now): WorkerMetrics {
  const registry = new Registry();
  const labels = ['resource', 'kind'] as const;
  const requests = new Counter({
    name: 'salesync_requests_total',
    help: 'Requests sent to the service',
    labelNames: labels,
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: 'salesync_rate_limited_total',
    help: '429 answers from the service',
    labelNames: labels,
    registers: [registry],
  });
  const written = new Counter({
    name: 'salesync_records_written_total',
    help: 'Records committed to the warehouse',
    labelNames: labels,
    registers: [registry],
  });
  const runs = new Counter({
    name: 'salesync_runs_total',
    help: 'Walks finished, by outcome',
    labelNames: [...labels, 'outcome'],
    registers: [registry],
  });
  const tokensWaited = new Counter({
    name: 'salesync_tokens_waited_ms_total',
    help: 'Milliseconds spent waiting for rate-limit tokens',
    registers: [registry],
  });
  const durations = new Histogram({
    name: 'salesync_run_duration_seconds',
    help: 'How long walks took',
    labelNames: [...labels, 'outcome'],
    buckets: [1, 5, 15, 60, 300, 900, 3600, 14_400],
    registers: [registry],
  });
  // Instance state: the last watermark seen per resource; the lag is computed at scrape time.
  const watermarks = new Map<ResourceName, bigint>();
  new Gauge({
    name: 'salesync_watermark_lag_seconds',
    help: 'Seconds between now and each resource watermark (how stale an incremental walk may be)',
    labelNames: ['resource'],
    registers: [registry],
    collect() {
      for (const [resource, micros] of watermarks) this.set({ resource }, Math.max(0, (now() - Number(micros / 1000n)) / 1000));
    },
  });

  const health = registerHealthGauges(registry, now);

  return {
    registry,
    health,
    recordResult(kind, result) {
      const l = { resource: result.resource, kind };
      requests.inc(l, result.requests);
      rateLimited.inc(l, result.rateLimited);
      written.inc(l, result.written);
      runs.inc({ ...l, outcome: result.outcome });
      durations.observe({ ...l, outcome: result.outcome }, result.durationMs / 1000);
      const micros = result.watermark && kind === 'sync' ? parseInstantMicros(result.watermark) : null;
      if (micros !== null) watermarks.set(result.resource, micros);
    },
    meter(limiter) {
      return {
        async acquire(keyIds, options) {
          const grant = await limiter.acquire(keyIds, options);
          tokensWaited.inc(grant.waitedMs);
          return grant;
        },
        observe: (keyId, observation) => limiter.observe(keyId, observation),
        pause: (keyId, ms) => limiter.pause(keyId, ms),
      };
    },
  };
}
