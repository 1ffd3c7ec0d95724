/**
 * What jobs/ offers the CLI: the queue, its schedules, backfill jobs, and the worker (whose modules, with
 * BullMQ's Worker, bull-board and express, load only when a worker starts).
 */
import type { RunWorkerOptions } from './worker.js';

export { openQueue, deduplicationId, QUEUE_NAME, type JobKind, type RealJobKind } from './queue.js';
export { jobsPerResource } from './queue-status.js';
export {
  defaultSchedules,
  listSchedules,
  registerSchedules,
  removeSchedules,
  validateSchedules,
  type ScheduleDefinition,
  type ScheduleRow,
} from './schedules.js';
export { backfillRequest, processBackfillJob, type BackfillJobData } from './backfill-job.js';
export { createJobEnvironment, type JobEnvironment } from './job-environment.js';
export type { RunWorkerOptions } from './worker.js';

/** Run a worker until it is told to stop (see `worker.ts`). */
export async function runWorker(options: RunWorkerOptions): Promise<void> {
  return (await import('./worker.js')).runWorker(options);
}
