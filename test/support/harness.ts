import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { DEFAULT_CONFIG, type Config } from '../../src/config.js';
import type { ResourceName } from '../../src/core/resources.js';
import { RESOURCE_NAMES } from '../../src/core/resources.js';
import type { WalkMode } from '../../src/core/types.js';
import type { RateLane } from '../../src/core/rate-limiter.js';
import { createSimulator, DEFAULT_KEYS, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';
import { createSyncEnvironment, runSync, type SyncEnvironment, type SyncReport } from '../../src/sync/index.js';

/** A simulator on a free port, a temp directory for the warehouse, and a way to sync one into the other. */
export interface Harness {
  sim: Simulator;
  url: string;
  dir: string;
  config: Config;
  env(overrides?: Partial<Config>, signal?: AbortSignal, lane?: RateLane): SyncEnvironment;
  sync(options?: {
    mode?: WalkMode;
    resources?: readonly ResourceName[];
    config?: Partial<Config>;
    signal?: AbortSignal;
  }): Promise<SyncReport>;
  close(): Promise<void>;
}

/** Limits high enough that tests spend their time on behaviour, not on waiting for tokens. */
export const FAST = { perKeyPerMinute: 600_000, perOrgPerMinute: 3_000_000 };

/** An organization whose deals take four pages and every other resource one: what the unkind-service tests sync. */
export const FOUR_PAGES_OF_DEALS = { deals: 700, companies: 60, contacts: 60, meetingLogs: 30, contactActivities: 30, users: 5 };

/** What a harness changes beside the simulator and the Config. */
export interface HarnessOptions {
  /** Bytes of rows a filling batch holds before its stage file (`WarehouseOptions.batchSpillBytes`). */
  batchSpillBytes?: number;
}

export async function startHarness(
  simulatorOptions: SimulatorOptions = {},
  configOverrides: Partial<Config> = {},
  harnessOptions: HarnessOptions = {},
): Promise<Harness> {
  const sim = createSimulator({ ...FAST, ...simulatorOptions });
  const { url } = await sim.listen(0);
  const dir = await mkdtemp(join(tmpdir(), 'salesync-test-'));
  const config: Config = {
    ...DEFAULT_CONFIG,
    baseUrl: url,
    apiKey: DEFAULT_KEYS.read,
    warehousePath: join(dir, 'warehouse.duckdb'),
    logLevel: 'silent',
    perKeyPerMinute: simulatorOptions.perKeyPerMinute ?? FAST.perKeyPerMinute,
    perOrgPerMinute: simulatorOptions.perOrgPerMinute ?? FAST.perOrgPerMinute,
    requestTimeoutMs: 5000,
    // Tests read through other warehouse handles in this process: only `sync()` (which closes) lingers.
    lingerMs: 0,
    ...configOverrides,
  };
  const logger = pino({ level: 'silent' });
  // One live warehouse per file in this process: a new environment releases the ones made before it
  // (DuckDB would let two handles of one file coexist in a process, each with its own stale view).
  const made: SyncEnvironment[] = [];
  // Every one made, closed again each time: a test may go on using one after a newer one was made, which opens its
  // file again (and may publish it later), so each is closed before the next sync and before the files go.
  const releaseAll = async () => {
    await Promise.all(made.map((e) => e.close()));
  };
  const env = (overrides: Partial<Config> = {}, signal?: AbortSignal, lane?: RateLane) => {
    void releaseAll();
    const e = createSyncEnvironment(
      { ...config, ...overrides },
      { logger, ...(signal ? { signal } : {}), ...(lane ? { lane } : {}), ...harnessOptions },
    );
    made.push(e);
    return e;
  };
  return {
    sim,
    url,
    dir,
    config,
    env,
    async sync(options = {}) {
      // One writer of the file at a time, as in a salesync process: the ones made before are closed first.
      await releaseAll();
      const e = env({ lingerMs: DEFAULT_CONFIG.lingerMs, ...options.config }, options.signal);
      return runSync(e.deps, e.settings, {
        resources: options.resources ?? RESOURCE_NAMES,
        mode: options.mode ?? 'incremental',
        concurrency: 3,
      }).finally(() => e.close());
    },
    async close() {
      await releaseAll();
      await sim.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
