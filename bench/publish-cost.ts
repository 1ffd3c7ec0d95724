import { stat } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { RECORD_RESOURCE_NAMES, RESOURCE_NAMES, resourceDescriptor } from '../src/core/resources.js';
import type { SimulatorOptions, Truth } from '../src/simulator/index.js';
import { createSyncEnvironment, runSync } from '../src/sync/index.js';
import { assertFileHolds, type ExpectedRows } from '../devtools/mirror-check.js';
import { truthFingerprints } from '../devtools/mirror-fingerprint.js';
import { startUnthrottledService } from './unthrottled-service.js';

export interface PublishCostResult {
  phase: 'first' | 'incremental';
  records: number;
  /** Publishes to WAREHOUSE_PATH during the sync (one per run end that wrote, plus the periodic ones). */
  publishes: number;
  publishMs: number;
  syncMs: number;
  /** Time spent publishing ÷ the sync's time. */
  ratio: number;
  /** Size of the published file after the sync. */
  bytes: number;
}

/** The tables a mirror of the service holds, and their rows. */
function serviceTables(truth: Truth): ExpectedRows {
  return Object.fromEntries([
    ...RECORD_RESOURCE_NAMES.map((resource) => [resourceDescriptor(resource).table, truth.records[resource].length] as const),
    ['users', truth.users.length] as const,
  ]);
}

/**
 * What publishing WAREHOUSE_PATH costs a sync: the time the warehouse spent publishing (CHECKPOINT, copy or
 * reflink, fsync, rename; from its `warehouse published` log lines) ÷ the sync's wall time, for a first sync and
 * for an incremental sync after `changeShare` of the records changed. Unthrottled service: the sync's time is
 * as short as it gets, so the share is the worst case.
 */
export async function benchPublishCost(options: {
  size: NonNullable<SimulatorOptions['size']>;
  changeShare: number;
}): Promise<PublishCostResult[]> {
  const service = await startUnthrottledService(19, options.size, 'publish');
  const { sim, config } = service;
  let publishes = 0;
  let publishMs = 0;
  // The warehouse's own account of each publish.
  const lines = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) {
        if (!line.includes('"warehouse published"')) continue;
        publishes += 1;
        publishMs += Number((JSON.parse(line) as { durationMs: number }).durationMs);
      }
      done();
    },
  });
  const logger = pino({ level: 'info' }, lines);
  const sync = async (phase: PublishCostResult['phase'], records: number): Promise<PublishCostResult> => {
    publishes = 0;
    publishMs = 0;
    const env = createSyncEnvironment(config, { logger });
    const started = Date.now();
    try {
      const report = await runSync(env.deps, env.settings, { resources: RESOURCE_NAMES, mode: 'incremental', concurrency: 3 });
      if (!report.ok) throw new Error('benchmark sync failed');
    } finally {
      await env.close();
    }
    const syncMs = Date.now() - started;
    // What analysts open: the published file holds every record the service has, once, as the service has it.
    const truth = sim.admin.truth();
    await assertFileHolds(config.warehousePath, serviceTables(truth), `the ${phase} sync`, truthFingerprints(truth));
    return { phase, records, publishes, publishMs, syncMs, ratio: publishMs / syncMs, bytes: (await stat(config.warehousePath)).size };
  };
  try {
    const total = Object.entries(options.size)
      .filter(([k]) => k !== 'users')
      .reduce((sum, [, v]) => sum + (v ?? 0), 0);
    const first = await sync('first', total);
    const changes = Math.max(1, Math.round(total * options.changeShare));
    sim.admin.mutateRandom(changes, 5, ['update', 'create']);
    const incremental = await sync('incremental', changes);
    return [first, incremental];
  } finally {
    await service.close();
  }
}
