import type { Queue } from 'bullmq';
import type { ResourceJobs } from '../src/status/index.js';

/** Jobs per resource that are waiting (queued or delayed) or running. */

/** At most this many jobs are inspected: a queue that deep has bigger problems than an exact count. */
const SCAN_LIMIT = 1000;

export async function jobsPerResource(queue: Queue): Promise<Map<string, ResourceJobs>> {
  const counts = new Map<string, ResourceJobs>();
  const tally = async (states: Array<'waiting' | 'delayed' | 'prioritized' | 'active'>, field: keyof ResourceJobs) => {
    for (const job of await queue.getJobs(states, 0, SCAN_LIMIT - 1)) {
      if (!job || job.name === 'tick') continue;
      const data = job.data as { resource?: string } | undefined;
      const resource = data?.resource ?? (job.name === 'summaries' ? 'meeting-logs' : 'all');
      const entry = counts.get(resource) ?? { queued: 0, active: 0 };
      entry[field] += 1;
      counts.set(resource, entry);
    }
  };
  await tally(['waiting', 'delayed', 'prioritized'], 'queued');
  await tally(['active'], 'active');
  return counts;
}
