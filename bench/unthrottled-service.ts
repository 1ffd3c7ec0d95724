import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONFIG, type Config } from '../src/config.js';
import { createSimulator, DEFAULT_KEYS, type Simulator, type SimulatorOptions } from '../src/simulator/index.js';

/** A simulator with no rate limit, a temporary warehouse directory, and the config that points a sync at both. */
export interface UnthrottledService {
  sim: Simulator;
  dir: string;
  config: Config;
  close(): Promise<void>;
}

/** For benches that measure the sync itself: the service's limit must never be what they see. */
export async function startUnthrottledService(
  seed: number,
  size: NonNullable<SimulatorOptions['size']>,
  name: string,
  extra: Pick<SimulatorOptions, 'now'> = {},
): Promise<UnthrottledService> {
  const sim = createSimulator({ seed, size, perKeyPerMinute: 10_000_000, perOrgPerMinute: 10_000_000, ...extra });
  const { url } = await sim.listen(0);
  const dir = await mkdtemp(join(tmpdir(), `salesync-bench-${name}-`));
  const config: Config = {
    ...DEFAULT_CONFIG,
    baseUrl: url,
    apiKey: DEFAULT_KEYS.read,
    warehousePath: join(dir, 'warehouse.duckdb'),
    perKeyPerMinute: 10_000_000,
    perOrgPerMinute: 10_000_000,
  };
  return {
    sim,
    dir,
    config,
    close: async () => {
      await sim.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
