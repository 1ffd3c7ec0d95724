import type { ResourceName } from '../src/core/resources.js';
import type { WalkMode } from '../src/core/types.js';
import { runSync, type SyncEnvironment, type SyncReport, type WalkGuard } from '../src/sync/index.js';

/**
 * The payload of a `sync` job: one resource, one mode. Processors stay thin shells over src/sync, so a
 * scheduled job, a manual `salesync sync` and a test walk a resource through exactly the same code.
 */
export interface SyncJobData {
  resource: ResourceName;
  mode: WalkMode;
}

/** `guard` is the per-resource lease when Redis is in use. */
export async function processSyncJob(
  env: Pick<SyncEnvironment, 'deps' | 'settings'>,
  data: SyncJobData,
  guard?: WalkGuard,
): Promise<SyncReport> {
  return runSync(env.deps, env.settings, { resources: [data.resource], mode: data.mode, concurrency: 1, ...(guard ? { guard } : {}) });
}
