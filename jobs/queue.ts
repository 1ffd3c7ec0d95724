import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ResourceName } from '../src/core/resources.js';
import type { SyncJobData } from './sync-job.js';

/** The one queue every salesync job goes through; `redisPrefix` namespaces its keys. */
export const QUEUE_NAME = 'salesync';

/** Reconcile and summaries payloads are defined by their processors; the queue only needs the resource. */
export interface ResourceJobData {
  resource?: ResourceName;
  [field: string]: unknown;
}
/** A scheduler only ever emits `tick`; the tick's handler adds the real job (sync-job.ts, backfill-job.ts carry their payloads). */
export type RealJobKind = 'sync' | 'backfill' | 'reconcile' | 'summaries';
export interface TickJobData {
  kind: Exclude<RealJobKind, 'backfill'>;
  data: SyncJobData | ResourceJobData;
}
export type JobKind = 'tick' | RealJobKind;

/**
 * Attempts and backoff for retriable failures (fatal ones throw UnrecoverableError and never retry).
 * Finished jobs are kept for a while so the dashboard can show them, then trimmed.
 */
export const JOB_DEFAULTS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 30_000 },
  removeOnComplete: { count: 200, age: 7 * 86_400 },
  removeOnFail: { count: 500, age: 30 * 86_400 },
};

/** At most one queued-or-running job per kind and resource: overlapping ticks add nothing. */
export function deduplicationId(kind: RealJobKind, resource: ResourceName | undefined): string {
  return `${kind}:${resource ?? 'all'}`;
}

export function openQueue(connection: Redis, prefix: string): Queue {
  const queue = new Queue(QUEUE_NAME, { connection, prefix, defaultJobOptions: JOB_DEFAULTS });
  // Its errors are its connection's, reported there; without a listener BullMQ prints them raw on stderr.
  queue.on('error', () => undefined);
  return queue;
}
