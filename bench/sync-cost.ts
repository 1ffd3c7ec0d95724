import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { RECORD_RESOURCE_NAMES, resourceDescriptor } from '../src/core/resources.js';
import { CHECKPOINT_THRESHOLD } from '../src/warehouse/connection.js';
import { exportBatches, type BatchedTable } from './duckdb-batched.js';
import { assertFileHolds, type ExpectedRows } from '../devtools/mirror-check.js';
import { startChildSimulator, runChildSync, runDuckdbBatchedChild, type PeakParts, type SyncChildResult } from './processes.js';
import { laneCeiling } from '../devtools/walk-schedule.js';
import { bareMsPerPage } from './bare-walks.js';

/** `total` records spread over four list resources, few meeting logs (each costs a single GET). */
export function spreadSize(total: number) {
  return {
    deals: Math.round(total * 0.35),
    companies: Math.round(total * 0.15),
    contacts: Math.round(total * 0.35),
    contactActivities: Math.round(total * 0.15),
    meetingLogs: 100,
    users: 50,
  };
}

/** The tables a sync of `spreadSize(total)` must leave, and the rows each holds (one per record, none twice). */
export function spreadTables(total: number): ExpectedRows {
  const size = spreadSize(total);
  return {
    deals: size.deals,
    companies: size.companies,
    contacts: size.contacts,
    contact_activities: size.contactActivities,
    meeting_logs: size.meetingLogs,
    users: size.users,
  };
}

export interface MemoryResult {
  records: number;
  maxRssMb: number;
  maxHeapMb: number;
  /** See SyncChildResult.liveOldSpaceMb. */
  liveOldSpaceMb: number;
  /** See SyncChildResult.atPeak. */
  atPeak: PeakParts | null;
  elapsedMs: number;
  /** CPU the sync process used (user + system, every thread), in seconds. */
  cpuSeconds: number;
  /**
   * Context, not the goal: the peak RSS of DuckDB alone loading the rows this sync wrote, in its batches, each
   * committed with its history rows, at the same memory limit and checkpoint threshold (duckdb-batched.ts).
   */
  duckdbAloneMaxRssMb: number;
}

/** Peak RSS of a full sync in its own process: pages must stream through, so it stays flat as data grows. */
export async function benchMemory(
  records: number,
  /** The settings the sync child runs with (SALESYNC_* passes through to it): DuckDB alone gets the same. */
  settings: { flushRows: number; memoryLimit: string },
  /** A file for the sync's RSS, sampled every 5 ms (`--rss-series`). */
  rssSeriesFile?: string,
): Promise<MemoryResult> {
  const dir = await mkdtemp(join(tmpdir(), 'salesync-bench-mem-'));
  const sim = await startChildSimulator(
    {
      seed: 11,
      size: spreadSize(records),
      perKeyPerMinute: 100_000_000,
      perOrgPerMinute: 100_000_000,
    },
    true,
  );
  try {
    const warehousePath = join(dir, 'w.duckdb');
    const result: SyncChildResult & { cpuSeconds?: number } = await runChildSync(sim.url, warehousePath, {
      SALES_API_RATE_LIMIT: '100000000',
      SALES_API_ORG_RATE_LIMIT: '100000000',
      ...(rssSeriesFile ? { BENCH_RSS_SERIES: rssSeriesFile } : {}),
    });
    assertOk(result);
    await sim.stop();
    await assertFileHolds(warehousePath, spreadTables(records), `the sync of ${records} records`, sim.fingerprints);
    const alone = await duckdbAlone(warehousePath, dir, settings);
    return {
      records: result.records,
      maxRssMb: result.maxRssMb,
      maxHeapMb: result.maxHeapMb,
      liveOldSpaceMb: result.liveOldSpaceMb ?? Number.NaN,
      atPeak: result.atPeak ?? null,
      elapsedMs: result.elapsedMs,
      cpuSeconds: result.cpuSeconds ?? Number.NaN,
      duckdbAloneMaxRssMb: alone.maxRssMb,
    };
  } finally {
    await sim.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The synced record tables cut into the sync's batches, then loaded again by DuckDB alone in a process of its own. */
async function duckdbAlone(
  warehousePath: string,
  dir: string,
  settings: { flushRows: number; memoryLimit: string },
): Promise<{ maxRssMb: number }> {
  const instance = await DuckDBInstance.create(warehousePath);
  const tables: BatchedTable[] = [];
  try {
    const connection = await instance.connect();
    for (const resource of RECORD_RESOURCE_NAMES) {
      tables.push(await exportBatches(connection, resourceDescriptor(resource).table, join(dir, 'batches'), settings.flushRows));
    }
    connection.closeSync();
  } finally {
    instance.closeSync();
  }
  return runDuckdbBatchedChild(
    { path: join(dir, 'alone.duckdb'), memoryLimit: settings.memoryLimit, checkpointThreshold: CHECKPOINT_THRESHOLD, tables },
    join(dir, 'alone.json'),
  );
}

export interface EndToEndResult {
  records: number;
  requests: number;
  elapsedMs: number;
  latencyMs: number;
  keys: number;
  walks: number;
  /** Requests per second the service allows this setup: min(rate limit, parallel walks ÷ latency). */
  boundPerSec: number;
  achievedPerSec: number;
  ratio: number;
  /** The most of the bound these walks could reach with no time lost per request (`laneCeiling`). */
  laneCeiling: number;
  /** The longest walk's length, in request times (`LaneWalk.length`). */
  longestWalk: number;
  /** Mean ms a page took a client doing nothing else, on as many lanes, against the same service (`bareMsPerPage`). */
  bareMsPerPage: number;
  /** The most of the bound any client reaches here: the lanes' ceiling at that page time, within the rate limit. */
  bareCeiling: number;
}

/**
 * A full sync with simulated latency against the physical bound: the rate limit of the keys used (capped by
 * the organization's), or what `walks` sequential walkers can do at that latency, whichever is lower.
 */
export async function benchEndToEnd(options: {
  records: number;
  latencyMs: number;
  keys: number;
  perKeyPerMinute: number;
  perOrgPerMinute: number;
  walks: number;
}): Promise<EndToEndResult> {
  const dir = await mkdtemp(join(tmpdir(), 'salesync-bench-e2e-'));
  const keys = Array.from({ length: options.keys }, (_, i) => `sk_Bench${String(i).padStart(2, '0')}${'x'.repeat(40)}`);
  const sim = await startChildSimulator({
    seed: 13,
    size: spreadSize(options.records),
    perKeyPerMinute: options.perKeyPerMinute,
    perOrgPerMinute: options.perOrgPerMinute,
    keys: keys.map((key) => ({ key, role: 'read' as const })),
    faults: { latencyMs: options.latencyMs },
  });
  try {
    const warehousePath = join(dir, 'w.duckdb');
    const result = await runChildSync(sim.url, warehousePath, {
      SALES_API_KEY: keys.join(','),
      SALES_API_RATE_LIMIT: String(options.perKeyPerMinute),
      SALES_API_ORG_RATE_LIMIT: String(options.perOrgPerMinute),
      SALESYNC_CONCURRENCY: String(options.walks),
    });
    assertOk(result);
    await assertFileHolds(warehousePath, spreadTables(options.records), `the sync of ${options.records} records`);
    const rateBound = Math.min(options.keys * options.perKeyPerMinute, options.perOrgPerMinute) / 60;
    const latencyBound = options.walks / (options.latencyMs / 1000);
    const boundPerSec = Math.min(rateBound, latencyBound);
    const achievedPerSec = result.requests / (result.elapsedMs / 1000);
    const ceiling = laneCeiling(result.walks, options.walks);
    // After the sync, on the same service: the largest resources, one lane each, as many lanes as the sync ran.
    const bare = await bareMsPerPage(sim.url, keys, ['deals', 'contacts', 'companies', 'contact-activities'].slice(0, options.walks), 200);
    return {
      records: result.records,
      requests: result.requests,
      elapsedMs: result.elapsedMs,
      latencyMs: options.latencyMs,
      keys: options.keys,
      walks: options.walks,
      boundPerSec,
      achievedPerSec,
      ratio: achievedPerSec / boundPerSec,
      laneCeiling: ceiling,
      longestWalk: Math.max(...result.walks.map((w) => w.length)),
      bareMsPerPage: bare,
      bareCeiling: Math.min(rateBound, (ceiling * options.walks * 1000) / bare) / boundPerSec,
    };
  } finally {
    await sim.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

function assertOk(result: SyncChildResult): void {
  if (!result.ok) throw new Error(`benchmark sync failed: ${result.errors.join(', ')}`);
}
