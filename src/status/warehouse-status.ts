import { canonicalPolicy, describePolicy, isEmptyPolicy, type PropertyPolicy, type ResourcePolicy } from '../core/property-policy.js';
import { RESOURCES, type RecordResourceName } from '../core/resources.js';
import { backfillStateKey } from '../core/state-keys.js';
import { parseInstantMicros } from '../core/time.js';
import type { RunRow, StoredPropertyPolicy, Warehouse } from '../warehouse/types.js';

/** Jobs of one resource waiting in the queue or running (from `jobs/`, when there is a queue). */
export interface ResourceJobs {
  queued: number;
  active: number;
}

/**
 * What the warehouse says of each resource: rows, freshness, quarantine and its last runs. One reader for
 * `status`, `status --check`, the CLI's metrics textfile and the worker's gauges, so they never disagree.
 */

/** One run of a resource, as `status` shows it. */
export interface RunSummary {
  startedAt: string;
  finishedAt: string | null;
  mode: string;
  outcome: string;
  records: number;
  requests: number;
  /** 429 answers. */
  rateLimited: number;
  /** Drift found: rows whose content had changed unseen (reconcile), logs whose summaries changed (summaries). */
  changed: number;
  /** Rows a complete reconcile sweep marked deleted. */
  deleted: number;
  durationMs: number | null;
  /** The failure's stable code (`unauthorized`, `walk_lease_lost`…), when it failed. */
  error: string | null;
}

export interface ResourceStatus {
  resource: string;
  rows: number;
  watermark: string | null;
  lastCompletedAt: string | null;
  /**
   * Milliseconds since the last completed walk, never negative: the completion time is the service's clock,
   * and a service clock ahead of this host's counts as "just now" (see `clockAheadMs`).
   */
  freshnessMs: number | null;
  /** How far the service's clock was ahead of this host's at the last completion, when it was (else absent). */
  clockAheadMs?: number;
  walkInProgress: boolean;
  /** An interrupted backfill waits to be resumed from its own checkpoint (`<resource>#backfill`). */
  backfillInProgress: boolean;
  /** Records in quarantine (`rejected_records`): failed validation, retried by every walk that sees them. */
  rejected: number;
  /** The most recent run of any mode. */
  lastRun: RunSummary | null;
  /** The most recent run of each mode (`incremental`, `full`, `reconcile`, `backfill`, `summaries`…) among the recent runs. */
  lastRuns: Record<string, RunSummary>;
  /** Jobs queued and running for the resource (only when REDIS_URL is set). */
  jobs?: ResourceJobs;
  /** The property policy in force (record resources; see docs/property-policy.md). */
  propertyPolicy?: PolicyStatus;
}

/** A resource's property policy: the configuration's, and whether its stored data was written under it yet. */
export interface PolicyStatus {
  /** One line: `exclude email; hash phone`, or `all properties kept`. */
  summary: string;
  include: readonly string[] | null;
  exclude: readonly string[];
  hash: readonly string[];
  /** False until the next run of the resource purges what the policy no longer allows and walks it in full. */
  applied: boolean;
}

function policyStatus(configured: ResourcePolicy | undefined, stored: StoredPropertyPolicy | null): PolicyStatus {
  const policy = canonicalPolicy(configured);
  // The secret is not compared: `status` may run without it.
  const applied = stored === null ? isEmptyPolicy(configured) : JSON.stringify(canonicalPolicy(stored.policy)) === JSON.stringify(policy);
  return { summary: describePolicy(configured), ...policy, applied };
}

/** Outcomes that mean a run did not do its job (an interrupted run resumes; a skipped one yielded to another). */
export const FAILED_OUTCOMES: readonly string[] = ['failed', 'abandoned'];

function summarize(run: RunRow): RunSummary {
  return {
    startedAt: run.startedAt.toISOString(),
    finishedAt: run.finishedAt ? run.finishedAt.toISOString() : null,
    mode: run.mode,
    outcome: run.outcome,
    records: run.records ?? 0,
    requests: run.requests ?? 0,
    rateLimited: run.rateLimited ?? 0,
    changed: run.changed ?? 0,
    deleted: run.deleted ?? 0,
    durationMs: run.finishedAt ? run.finishedAt.getTime() - run.startedAt.getTime() : null,
    error: run.errorCode ?? null,
  };
}

/** Milliseconds since `completedAt` (an ISO instant of the service's clock), clamped at 0; null when never. */
export function ageOf(completedAt: string | null, now: number): { freshnessMs: number | null; clockAheadMs?: number } {
  const micros = completedAt ? parseInstantMicros(completedAt) : null;
  if (micros === null) return { freshnessMs: null };
  const age = now - Number(micros / 1000n);
  return age >= 0 ? { freshnessMs: age } : { freshnessMs: 0, clockAheadMs: -age };
}

/**
 * Every resource's status while nothing is published yet (a first sync is writing the warehouse, or was stopped):
 * nothing stored and no walk completed, so `status --check` reports each resource as never completed. Pure.
 */
export function unpublishedStatus(policy?: PropertyPolicy): ResourceStatus[] {
  return RESOURCES.map((descriptor) => ({
    resource: descriptor.name,
    rows: 0,
    watermark: null,
    lastCompletedAt: null,
    freshnessMs: null,
    walkInProgress: false,
    backfillInProgress: false,
    rejected: 0,
    lastRun: null,
    lastRuns: {},
    ...(policy && descriptor.shape === 'record'
      ? { propertyPolicy: policyStatus(policy[descriptor.name as RecordResourceName], null) }
      : {}),
  }));
}

/** Every resource's status, read through the Warehouse interface (the caller opens and closes it). */
export async function collectStatus(warehouse: Warehouse, now = Date.now(), policy?: PropertyPolicy): Promise<ResourceStatus[]> {
  const counts = await warehouse.tableCounts();
  // The latest of each mode however long ago: a failed nightly reconcile stays visible through a day of syncs.
  const runs = await warehouse.latestRuns();
  const rejected = await warehouse.rejectedCounts();
  const statuses: ResourceStatus[] = [];
  for (const descriptor of RESOURCES) {
    const state = await warehouse.readState(descriptor.name);
    // Newest first: the first run seen is the resource's latest.
    const mine = runs.filter((r) => r.resource === descriptor.name);
    const lastRuns: Record<string, RunSummary> = {};
    for (const run of mine) lastRuns[run.mode] ??= summarize(run);
    statuses.push({
      resource: descriptor.name,
      rows: counts[descriptor.table] ?? 0,
      watermark: state.watermark,
      lastCompletedAt: state.lastCompletedAt,
      ...ageOf(state.lastCompletedAt, now),
      walkInProgress: state.walk !== null && state.walk.cursor !== null,
      backfillInProgress:
        descriptor.shape === 'record' &&
        ((await warehouse.readState(descriptor.name, backfillStateKey(descriptor.name as RecordResourceName))).walk?.cursor ?? null) !==
          null,
      rejected: rejected[descriptor.name] ?? 0,
      lastRun: mine[0] ? summarize(mine[0]) : null,
      lastRuns,
      ...(policy && descriptor.shape === 'record'
        ? {
            propertyPolicy: policyStatus(
              policy[descriptor.name as RecordResourceName],
              await warehouse.storedPropertyPolicy(descriptor.name as RecordResourceName),
            ),
          }
        : {}),
    });
  }
  return statuses;
}
