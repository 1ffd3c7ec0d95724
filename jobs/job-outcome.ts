import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { SalesyncError } from '../src/core/errors.js';
import type { ResourceResult } from '../src/sync/index.js';

/** What the queue should do with a job after its walk(s). Pure: decided from the results alone. */
export type JobVerdict =
  | { action: 'complete' }
  /** Run again at `at` without spending an attempt: a long 429, or a walk cut short by shutdown or a lost lease. */
  | { action: 'delay'; at: number; reason: string }
  /** Spend an attempt; BullMQ retries with exponential backoff. */
  | { action: 'retry'; error: SalesyncError }
  /** Never retry (a bad key, a forbidden resource, invalid configuration). */
  | { action: 'fail'; error: SalesyncError };

/** A walk interrupted by a shutdown resumes from its checkpoint on whichever worker runs next. */
const RESUME_AFTER_INTERRUPT_MS = 1000;

/** The longest a job waiting for its resource sleeps between looks. */
const MAX_BUSY_DELAY_MS = 15 * 60_000;

/**
 * How long a job that found its resource walked elsewhere sleeps before it looks again: as long as it has
 * waited so far, at least `minMs` and at most 15 minutes, so a long backfill holding the resource costs a
 * handful of looks (each recorded as a skipped run), not one a minute. Pure.
 */
export function busyDelayMs(waitedMs: number, minMs: number): number {
  return Math.min(MAX_BUSY_DELAY_MS, Math.max(minMs, waitedMs));
}

/**
 * `busyDelay`: for a job that must run however busy its resource is (a sweep or a backfill, which no other walk
 * stands in for), the wait before it looks again when it was skipped; without it a skipped job is complete
 * (a scheduled sync: the walk already running fetches what it would have).
 */
export function verdictFor(results: readonly Pick<ResourceResult, 'outcome' | 'error'>[], now: number, busyDelay?: number): JobVerdict {
  const failed = results.filter((r) => r.error);
  const fatal = failed.find((r) => r.error!.disposition === 'fatal');
  if (fatal) return { action: 'fail', error: fatal.error! };
  const limited = failed.find((r) => r.error!.code === 'rate_limited');
  if (limited) return verdictForError(limited.error!, now);
  if (failed[0]) return { action: 'retry', error: failed[0].error! };
  if (results.some((r) => r.outcome === 'interrupted')) {
    return { action: 'delay', at: now + RESUME_AFTER_INTERRUPT_MS, reason: 'interrupted: resumes from its checkpoint' };
  }
  if (busyDelay !== undefined && results.some((r) => r.outcome === 'skipped')) {
    return {
      action: 'delay',
      at: now + busyDelay,
      reason: `skipped: another walk holds the resource; looks again in ${Math.ceil(busyDelay / 1000)} s`,
    };
  }
  return { action: 'complete' };
}

export function verdictForError(error: SalesyncError, now: number): JobVerdict {
  if (error.code === 'rate_limited') {
    const retryAfterMs = Number(error.context.retryAfterMs ?? 60_000);
    return {
      action: 'delay',
      at: now + retryAfterMs,
      reason: `rate limited: the service asked to wait ${Math.ceil(retryAfterMs / 1000)} s`,
    };
  }
  return error.disposition === 'fatal' ? { action: 'fail', error } : { action: 'retry', error };
}

/**
 * Apply a verdict: return normally to complete; move to delayed and throw DelayedError (BullMQ then neither
 * fails nor retries it); throw for a retry; throw UnrecoverableError so a fatal failure is never retried.
 */
export async function settleJob(job: Job, token: string | undefined, verdict: JobVerdict): Promise<void> {
  switch (verdict.action) {
    case 'complete':
      return;
    case 'delay':
      await job.log(verdict.reason);
      await job.moveToDelayed(verdict.at, token);
      throw new DelayedError(verdict.reason);
    case 'retry':
      throw new Error(`${verdict.error.code}: ${verdict.error.message}`, { cause: verdict.error });
    case 'fail':
      throw new UnrecoverableError(`${verdict.error.code}: ${verdict.error.message}`);
  }
}
