import type { ResourceName } from '../src/core/resources.js';
import { runReconcile, type ReconcileReport, type SyncEnvironment, type WalkGuard } from '../src/sync/index.js';

/**
 * The payload of a `reconcile` job: one resource's complete sweep. A thin shell over src/sync, so the nightly
 * job, `salesync reconcile` and the tests sweep through the same code. An interrupted sweep resumes from its
 * checkpoint when the job runs again.
 */
export interface ReconcileJobData {
  resource: ResourceName;
  /**
   * Meeting logs: re-fetch every log's single view (one GET per log). Build `env` on the `summaries` lane for a
   * deep job, so it never starves the scheduled walks. @defaultValue false
   */
  deep?: boolean;
}

/** `guard` is the resource's lease: a sweep never overlaps a sync or backfill of the same resource. */
export async function processReconcileJob(env: SyncEnvironment, data: ReconcileJobData, guard?: WalkGuard): Promise<ReconcileReport> {
  return runReconcile(env.deps, env.settings, {
    resources: [data.resource],
    deep: data.deep === true,
    concurrency: 1,
    ...(guard ? { guard } : {}),
  });
}
