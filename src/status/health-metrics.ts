import { Gauge, type Registry } from 'prom-client';
import { parseInstantMicros } from '../core/time.js';
import { FAILED_OUTCOMES, type ResourceStatus } from './warehouse-status.js';

/**
 * The warehouse's health as Prometheus gauges, the same whether the worker serves them at `/metrics` or a CLI
 * run writes them to SALESYNC_METRICS_TEXTFILE: freshness per resource, rows, quarantine, and the last run of
 * each resource and mode (outcome, records, requests, 429s, drift and deletions found). Fed from `collectStatus`.
 */
export interface HealthGauges {
  /** Replace every gauge's values with these statuses' (a resource or mode no longer present is dropped). */
  update(statuses: readonly ResourceStatus[]): void;
}

const seconds = (iso: string | null): number | null => {
  const micros = iso ? parseInstantMicros(iso) : null;
  return micros === null ? null : Number(micros / 1000n) / 1000;
};

export function registerHealthGauges(registry: Registry, now: () => number = Date.now): HealthGauges {
  const registers = [registry];
  const resource = ['resource'] as const;
  const run = ['resource', 'mode'] as const;
  let completedAt = new Map<string, number>();
  const gauge = (name: string, help: string, labelNames: readonly string[]) => new Gauge({ name, help, labelNames, registers });

  const rows = gauge('salesync_resource_rows', 'Rows of the resource table (not marked deleted)', resource);
  const lastCompleted = gauge(
    'salesync_resource_last_completed_timestamp_seconds',
    'When the last walk of the resource completed (service clock)',
    resource,
  );
  const rejected = gauge(
    'salesync_rejected_records',
    'Records in quarantine (rejected_records): failed validation, missing from the mirror',
    resource,
  );
  const walkInProgress = gauge('salesync_walk_interrupted', '1 when an interrupted walk waits to be resumed from its checkpoint', resource);
  new Gauge({
    name: 'salesync_resource_age_seconds',
    help: 'Seconds since the last completed walk of the resource (its freshness; alert when above your limit)',
    labelNames: resource,
    registers,
    collect() {
      this.reset();
      for (const [name, at] of completedAt) this.set({ resource: name }, Math.max(0, now() / 1000 - at));
    },
  });
  const runStarted = gauge('salesync_last_run_timestamp_seconds', 'When the last run of the resource in this mode started', run);
  const runFailed = gauge('salesync_last_run_failed', '1 when the last run of the resource in this mode failed (or its process died)', run);
  const runRecords = gauge('salesync_last_run_records', 'Records the last run received', run);
  const runRequests = gauge('salesync_last_run_requests', 'Requests the last run sent', run);
  const runRateLimited = gauge('salesync_last_run_rate_limited', '429 answers the last run met', run);
  const runChanged = gauge(
    'salesync_last_run_drift',
    'Rows whose content had changed unseen, found by the last run (a reconcile: drift)',
    run,
  );
  const runDeleted = gauge('salesync_last_run_deleted', 'Rows the last run marked deleted (a reconcile)', run);
  const runDuration = gauge('salesync_last_run_duration_seconds', 'How long the last run took', run);
  const perRun = [runStarted, runFailed, runRecords, runRequests, runRateLimited, runChanged, runDeleted, runDuration];

  return {
    update(statuses) {
      for (const g of [rows, lastCompleted, rejected, walkInProgress, ...perRun]) g.reset();
      const completed = new Map<string, number>();
      for (const s of statuses) {
        const l = { resource: s.resource };
        rows.set(l, s.rows);
        rejected.set(l, s.rejected);
        walkInProgress.set(l, s.walkInProgress ? 1 : 0);
        const at = seconds(s.lastCompletedAt);
        if (at !== null) {
          lastCompleted.set(l, at);
          completed.set(s.resource, at);
        }
        for (const [mode, r] of Object.entries(s.lastRuns)) {
          const rl = { resource: s.resource, mode };
          const started = seconds(r.startedAt);
          if (started !== null) runStarted.set(rl, started);
          runFailed.set(rl, FAILED_OUTCOMES.includes(r.outcome) ? 1 : 0);
          runRecords.set(rl, r.records);
          runRequests.set(rl, r.requests);
          runRateLimited.set(rl, r.rateLimited);
          runChanged.set(rl, r.changed);
          runDeleted.set(rl, r.deleted);
          if (r.durationMs !== null) runDuration.set(rl, r.durationMs / 1000);
        }
      }
      completedAt = completed;
    },
  };
}
