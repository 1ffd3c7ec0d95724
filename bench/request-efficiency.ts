import { pino } from 'pino';
import { RECORD_RESOURCE_NAMES, RESOURCE_NAMES, resourceDescriptor } from '../src/core/resources.js';
import { minusMs, parseInstantMicros } from '../src/core/time.js';
import type { SimulatorOptions } from '../src/simulator/index.js';
import { createSyncEnvironment, runSync } from '../src/sync/index.js';
import { startUnthrottledService } from './unthrottled-service.js';

export interface EfficiencyResult {
  phase: 'full' | 'incremental';
  records: number;
  requests: number;
  /** ceil(records/200) list pages per resource (at least one), the property calls, one single view per new or changed meeting log. */
  minimum: number;
  ratio: number;
}

const PAGE = 200;

/**
 * Requests a sync spends ÷ the fewest the service's interface allows for the same result, for a first full
 * sync and for an incremental sync after a known set of changes. Counted by the simulator, not by us.
 */
export async function benchRequestEfficiency(options: {
  size: NonNullable<SimulatorOptions['size']>;
  changes: number;
}): Promise<EfficiencyResult[]> {
  const service = await startUnthrottledService(7, options.size, 'eff');
  const { sim, config } = service;
  const sync = async () => {
    const env = createSyncEnvironment(config, { logger: pino({ level: 'silent' }) });
    const report = await runSync(env.deps, env.settings, { resources: RESOURCE_NAMES, mode: 'incremental', concurrency: 3 });
    if (!report.ok) {
      const failed = report.results.filter((r) => r.error).map((r) => `${r.resource}: ${r.error?.code} ${r.error?.message}`);
      throw new Error(`benchmark sync failed: ${failed.join('; ') || 'no resource failed (see the report)'}`);
    }
    return env.warehouse;
  };
  /** The minimum for records updated at or after `since` per resource (everything when null). */
  const minimum = (since: Map<string, bigint> | null): { records: number; minimum: number } => {
    const truth = sim.admin.truth();
    let records = 0;
    let min = RECORD_RESOURCE_NAMES.length + Math.max(1, Math.ceil(truth.users.length / PAGE));
    for (const resource of RECORD_RESOURCE_NAMES) {
      const from = since?.get(resource);
      const changed = truth.records[resource].filter((r) => from === undefined || parseInstantMicros(r.updated_at)! >= from).length;
      records += changed;
      min += Math.max(1, Math.ceil(changed / PAGE));
      if (resourceDescriptor(resource).hasSummaries) min += changed;
    }
    return { records, minimum: min };
  };
  try {
    const results: EfficiencyResult[] = [];
    sim.admin.resetStats();
    const warehouse = await sync();
    const full = minimum(null);
    results.push({ phase: 'full', ...full, requests: sim.admin.stats().total, ratio: sim.admin.stats().total / full.minimum });

    const since = new Map<string, bigint>();
    for (const resource of RECORD_RESOURCE_NAMES) {
      const state = await warehouse.readState(resource);
      since.set(resource, parseInstantMicros(minusMs(state.watermark!, config.lookbackMs))!);
    }
    sim.admin.mutateRandom(options.changes, 3, ['update', 'create', 'activity']);
    sim.admin.resetStats();
    await sync();
    const incremental = minimum(since);
    results.push({
      phase: 'incremental',
      ...incremental,
      requests: sim.admin.stats().total,
      ratio: sim.admin.stats().total / incremental.minimum,
    });
    return results;
  } finally {
    await service.close();
  }
}
