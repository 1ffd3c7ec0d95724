import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { processReconcileJob } from '../../jobs/reconcile-job.js';
import { processSummariesJob } from '../../jobs/summaries-job.js';
import { createSyncEnvironment } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SMALL = { deals: 60, companies: 20, contacts: 40, meetingLogs: 60, contactActivities: 20, users: 8 };
const LOGS = { resources: ['meeting-logs' as const] };

/** The summaries job's environment: its own lane of the rate budget. */
function summariesEnv(h: Harness) {
  return createSyncEnvironment(h.config, { logger: pino({ level: 'silent' }), lane: 'summaries' });
}

describe('summary lifecycle against the simulator', () => {
  it('pending summaries of a recent log become final in the table after `summaries`; older logs are not fetched', async () => {
    harness = await startHarness({ seed: 41, size: SMALL });
    const { sim } = harness;
    const deal = sim.admin.truth().records.deals[0]!;
    const { activity: log } = sim.admin.recordActivity('meeting-logs', deal.id);
    expect((await harness.sync(LOGS)).ok).toBe(true);
    const warehouse = harness.env().warehouse;
    await expectMirrorsTruth(warehouse, sim, LOGS);

    // Summaries appear later, without moving the log's updated_at: an incremental sync cannot see them.
    sim.admin.generateSummaries(log.id);
    expect((await harness.sync(LOGS)).ok).toBe(true);
    await expect(expectMirrorsTruth(warehouse, sim, LOGS)).rejects.toThrow(/meeting_log_summaries/);

    sim.admin.resetStats();
    const first = await processSummariesJob(summariesEnv(harness));
    // Only the new log is in the window; seeded logs (pending ones included) are older.
    expect(first).toMatchObject({ outcome: 'succeeded', candidates: 1, fetched: 1, summariesChanged: 1, written: 0 });
    expect(sim.admin.stats().byRoute['GET /v1/meeting-logs/{id}/']).toBe(1);
    await expectMirrorsTruth(warehouse, sim, LOGS);
    expect(await warehouse.query(`SELECT DISTINCT status FROM meeting_log_summaries WHERE meeting_log_id = '${log.id}'`)).toEqual([{ status: 'pending' }]);

    sim.admin.generateSummaries(log.id);
    const second = await processSummariesJob(summariesEnv(harness));
    expect(second).toMatchObject({ outcome: 'succeeded', candidates: 1, summariesChanged: 1 });
    await expectMirrorsTruth(warehouse, sim, LOGS);
    expect(await warehouse.query(`SELECT DISTINCT status FROM meeting_log_summaries WHERE meeting_log_id = '${log.id}'`)).toEqual([{ status: 'completed' }]);

    // Final now: nothing left to fetch.
    const third = await processSummariesJob(summariesEnv(harness));
    expect(third).toMatchObject({ candidates: 0, fetched: 0, requests: 1 });
    const runs = await warehouse.query(`SELECT resource, outcome, records, changed FROM sync_runs WHERE mode = 'summaries' ORDER BY started_at`);
    expect(runs).toEqual([
      { resource: 'meeting-logs', outcome: 'succeeded', records: 1, changed: 1 },
      { resource: 'meeting-logs', outcome: 'succeeded', records: 1, changed: 1 },
      { resource: 'meeting-logs', outcome: 'succeeded', records: 0, changed: 0 },
    ]);
  });

  it('a window of zero leaves every log alone', async () => {
    harness = await startHarness({ seed: 42, size: SMALL });
    const deal = harness.sim.admin.truth().records.deals[0]!;
    harness.sim.admin.recordActivity('meeting-logs', deal.id);
    expect((await harness.sync(LOGS)).ok).toBe(true);
    // The Date header has second precision, so a log recorded in this second may still count: step past it.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const result = await processSummariesJob(summariesEnv(harness), { windowMs: 0 });
    expect(result).toMatchObject({ outcome: 'succeeded', candidates: 0, fetched: 0 });
  });

  it('a summary regenerated on an old log is caught by reconcile --deep, not by summaries or a plain reconcile', async () => {
    harness = await startHarness({ seed: 43, size: SMALL });
    const { sim } = harness;
    expect((await harness.sync(LOGS)).ok).toBe(true);
    const warehouse = harness.env().warehouse;
    const truth = sim.admin.truth();
    const old = truth.records['meeting-logs'].find((r) => truth.summaries[r.id]?.every((s) => s.status === 'completed'))!;
    sim.admin.generateSummaries(old.id);

    expect(await processSummariesJob(summariesEnv(harness))).toMatchObject({ candidates: 0 });
    const plain = await processReconcileJob(harness.env(), { resource: 'meeting-logs' });
    expect(plain.results[0]).toMatchObject({ outcome: 'succeeded', summariesChanged: 0, details: 0 });
    await expect(expectMirrorsTruth(warehouse, sim, LOGS)).rejects.toThrow(/meeting_log_summaries/);

    const deep = await processReconcileJob(summariesEnv(harness), { resource: 'meeting-logs', deep: true });
    expect(deep.results[0]).toMatchObject({ outcome: 'succeeded', summariesChanged: 1, changed: 0, written: 0, details: SMALL.meetingLogs });
    await expectMirrorsTruth(warehouse, sim, LOGS);
  });
});
