import { pino } from 'pino';
import { RECORD_RESOURCE_NAMES, RESOURCE_NAMES, resourceDescriptor, type RecordResourceName } from '../src/core/resources.js';
import { minusMs, parseInstantMicros } from '../src/core/time.js';
import type { SimulatorOptions } from '../src/simulator/index.js';
import { createSyncEnvironment, runSync } from '../src/sync/index.js';
import { startUnthrottledService } from './unthrottled-service.js';

export interface EfficiencyResult {
  /**
   * `full`: a first sync; `incremental`: after a few changes; `confirming`: after a few changes, following an
   * incremental sync whose windows took several pages, which it lists again (`sync_state.confirm_from`).
   */
  phase: 'full' | 'incremental' | 'confirming';
  records: number;
  requests: number;
  /** ceil(records/200) list pages per resource (at least one), the property calls, one single view per new or changed meeting log. */
  minimum: number;
  ratio: number;
  /** `confirming`: the minimum for the new changes alone, as if the window listed before were not listed again. */
  changesOnly?: number;
}

const PAGE = 200;
const HOUR = 3_600_000;

/**
 * Requests a sync spends ÷ the fewest the service's interface allows for the same result, for a first full
 * sync, for an incremental sync after a known set of changes, and for one after a walk whose windows took several
 * pages (its minimum: listing the window it lists again, and single views of the new changes only). Counted by
 * the simulator, not by us. The service's clock is moved by hand, an hour between rounds (more than the
 * lookback), so each round's minimum counts only the records its window must list.
 */
export async function benchRequestEfficiency(options: {
  size: NonNullable<SimulatorOptions['size']>;
  changes: number;
  /** Changes before the `confirming` round's sync: enough to take several pages per resource. */
  manyChanges: number;
}): Promise<EfficiencyResult[]> {
  let clock = Date.now();
  const service = await startUnthrottledService(7, options.size, 'eff', { now: () => clock });
  // Summaries are re-read on their own schedule, which the hours moved by hand would make due: not a walk's cost.
  const config = { ...service.config, summariesWindowMs: 0 };
  const { sim } = service;
  const sync = async () => {
    const env = createSyncEnvironment(config, { logger: pino({ level: 'silent' }) });
    const report = await runSync(env.deps, env.settings, { resources: RESOURCE_NAMES, mode: 'incremental', concurrency: 3 });
    if (!report.ok) {
      const failed = report.results.filter((r) => r.error).map((r) => `${r.resource}: ${r.error?.code} ${r.error?.message}`);
      throw new Error(`benchmark sync failed: ${failed.join('; ') || 'no resource failed (see the report)'}`);
    }
    return env.warehouse;
  };
  /**
   * The minimum for listing records updated at or after `listed` per resource (everything when null), with one
   * single view per meeting log new or changed at or after `changed` (every log when null): a log listed again
   * unchanged needs none.
   */
  const minimum = (listed: Map<string, bigint> | null, changed: bigint | null): { records: number; minimum: number } => {
    const truth = sim.admin.truth();
    let records = 0;
    let min = RECORD_RESOURCE_NAMES.length + Math.max(1, Math.ceil(truth.users.length / PAGE));
    const count = (resource: RecordResourceName, from: bigint | undefined | null) =>
      truth.records[resource].filter((r) => from == null || parseInstantMicros(r.updated_at)! >= from).length;
    for (const resource of RECORD_RESOURCE_NAMES) {
      const inWindow = count(resource, listed?.get(resource));
      records += inWindow;
      min += Math.max(1, Math.ceil(inWindow / PAGE));
      if (resourceDescriptor(resource).hasSummaries) min += count(resource, changed);
    }
    return { records, minimum: min };
  };
  /** Where each resource's next incremental walk starts: the watermark (or confirm_from) less the lookback. */
  const nextWindows = async (warehouse: Awaited<ReturnType<typeof sync>>, confirming: boolean) => {
    const from = new Map<string, bigint>();
    for (const resource of RECORD_RESOURCE_NAMES) {
      const state = await warehouse.readState(resource);
      const start = (confirming ? state.confirmFrom : null) ?? state.watermark!;
      from.set(resource, parseInstantMicros(minusMs(start, config.lookbackMs))!);
    }
    return from;
  };
  /** An hour of `changes`, spread over it, then a sync; returns the instant the hour began (micros). */
  const round = async (changes: number) => {
    const began = BigInt(clock + 1) * 1000n;
    const chunks = 12;
    for (let chunk = 0; chunk < chunks; chunk++) {
      clock += HOUR / chunks;
      sim.admin.mutateRandom(Math.ceil(changes / chunks), 3 + chunk, ['update', 'create', 'activity']);
    }
    clock += 1000;
    sim.admin.resetStats();
    const warehouse = await sync();
    return { warehouse, requests: sim.admin.stats().total, began };
  };
  try {
    const results: EfficiencyResult[] = [];
    sim.admin.resetStats();
    let warehouse = await sync();
    const full = minimum(null, null);
    results.push({ phase: 'full', ...full, requests: sim.admin.stats().total, ratio: sim.admin.stats().total / full.minimum });

    let windows = await nextWindows(warehouse, false);
    let done = await round(options.changes);
    const incremental = minimum(windows, done.began);
    results.push({ phase: 'incremental', ...incremental, requests: done.requests, ratio: done.requests / incremental.minimum });

    // A busy hour: windows of several pages each, so the walk after it lists them again.
    done = await round(options.manyChanges);
    warehouse = done.warehouse;
    const listedAgain = await nextWindows(warehouse, true);
    windows = await nextWindows(warehouse, false);
    done = await round(options.changes);
    const confirming = minimum(listedAgain, done.began);
    results.push({
      phase: 'confirming',
      ...confirming,
      requests: done.requests,
      ratio: done.requests / confirming.minimum,
      changesOnly: minimum(windows, done.began).minimum,
    });
    return results;
  } finally {
    await service.close();
  }
}
