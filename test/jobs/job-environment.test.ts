import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobEnvironment } from '../../jobs/index.js';
import type { RateLane, RateLimiter } from '../../src/core/rate-limiter.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ size: { deals: 3, companies: 1, contacts: 1, meetingLogs: 1, contactActivities: 1, users: 1 } });
});
afterAll(async () => harness?.close());

/** The lanes the limiter was asked for, in order. */
function recordingLanes(lanes: Array<RateLane | undefined>): (limiter: RateLimiter) => RateLimiter {
  return (limiter) => ({
    acquire: (keyIds, options) => {
      lanes.push(options?.lane);
      return limiter.acquire(keyIds, options);
    },
    observe: (keyId, observation) => limiter.observe(keyId, observation),
    pause: (keyId, ms) => limiter.pause(keyId, ms),
  });
}

describe('the worker\u2019s job environment', () => {
  it('spends each lane\u2019s budget from its own deps, and a run that names its lane keeps it', async () => {
    const lanes: Array<RateLane | undefined> = [];
    const jobs = createJobEnvironment(harness.config, {
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      redis: null,
      meter: recordingLanes(lanes),
    });
    try {
      await jobs.env.deps.makeApi().listProperties('deals');
      await jobs.backfillDeps.makeApi().listProperties('deals');
      await jobs.summariesDeps.makeApi().listProperties('deals');
      await jobs.backfillDeps.makeApi('summaries').listProperties('deals');
    } finally {
      await jobs.close();
    }
    expect(lanes.map((lane) => lane ?? 'sync')).toEqual(['sync', 'backfill', 'summaries', 'summaries']);
  });
});
