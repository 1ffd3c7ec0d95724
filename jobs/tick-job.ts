import type { Queue } from 'bullmq';
import { deduplicationId, type TickJobData } from './queue.js';

/**
 * A scheduler's tick adds the real job. Job Schedulers create the next job when the current one starts,
 * so a long walk would overlap the next run if the scheduler emitted it directly; a tick is instant, and
 * the deduplication id (kind and resource) makes a tick that finds the job still queued or running add nothing.
 */
export async function processTickJob(queue: Queue, tick: TickJobData): Promise<{ deduplicationId: string; jobId: string | undefined }> {
  // A deep reconcile is its own job: one queued behind the nightly sweep must not be taken for it.
  const deep = 'deep' in tick.data && tick.data.deep === true;
  const id = `${deduplicationId(tick.kind, tick.data.resource)}${deep ? ':deep' : ''}`;
  // When the id is taken, BullMQ adds nothing and returns the job that holds it.
  const job = await queue.add(tick.kind, tick.data, { deduplication: { id } });
  return { deduplicationId: id, jobId: job.id };
}
