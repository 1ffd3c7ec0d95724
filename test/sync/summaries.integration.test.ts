import { afterEach, describe, expect, it } from 'vitest';
import { processReconcileJob } from '../../jobs/reconcile-job.js';
import { processSummariesJob } from '../../jobs/summaries-job.js';
import { refreshSummaries } from '../../src/sync/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SMALL = { deals: 60, companies: 20, contacts: 40, meetingLogs: 60, contactActivities: 20, users: 8 };
const LOGS = { resources: ['meeting-logs' as const] };
const HOUR = 3_600_000;

/** The summaries job's environment: its own lane of the rate budget. */
/** In the summaries lane; made through the harness, which keeps one live warehouse per file in this process. */
function summariesEnv(h: Harness) {
  return h.env({}, undefined, 'summaries');
}

describe('summary lifecycle against the simulator', () => {
  it('`sync` alone keeps summaries equal to the service through empty → queued → done, whatever the status names, and stops re-reading a settled log', async () => {
    let clock = Date.UTC(2026, 0, 10, 12);
    harness = await startHarness({ seed: 41, size: SMALL, now: () => clock, summaryStatuses: { pending: 'queued', final: ['done'] } });
    const { sim } = harness;
    const deal = sim.admin.truth().records.deals[0]!;
    const { activity: log } = sim.admin.recordActivity('meeting-logs', deal.id);
    const warehouse = harness.env().warehouse;
    const singleViews = () => sim.admin.stats().byRoute['GET /v1/meeting-logs/{id}/'] ?? 0;
    const hourlySync = async () => {
      clock += HOUR;
      sim.admin.resetStats();
      expect((await harness!.sync(LOGS)).ok).toBe(true);
      return singleViews();
    };

    // A new log: the walk reads its single view (no summaries yet) and starts its re-read schedule.
    expect((await harness.sync(LOGS)).ok).toBe(true);
    await expectMirrorsTruth(warehouse, sim, LOGS);

    // Summaries appear and change without moving the log's updated_at: each is in the table one sync later.
    sim.admin.generateSummaries(log.id);
    expect(await hourlySync()).toBe(1);
    await expectMirrorsTruth(warehouse, sim, LOGS);
    expect(await warehouse.query(`SELECT DISTINCT status FROM meeting_log_summaries WHERE meeting_log_id = '${log.id}'`)).toEqual([
      { status: 'queued' },
    ]);
    sim.admin.generateSummaries(log.id);
    expect(await hourlySync()).toBe(1);
    await expectMirrorsTruth(warehouse, sim, LOGS);
    expect(await warehouse.query(`SELECT DISTINCT status FROM meeting_log_summaries WHERE meeting_log_id = '${log.id}'`)).toEqual([
      { status: 'done' },
    ]);

    // Unchanged reads are spaced ever further apart (1 h, 2 h, 4 h, ...): the log is read less and less.
    const reads = [];
    for (let hour = 0; hour < 8; hour++) reads.push(await hourlySync());
    expect(reads).toEqual([1, 0, 1, 0, 0, 0, 1, 0]);
    // Out of the window, never again.
    clock += 15 * 24 * HOUR;
    expect(await hourlySync()).toBe(0);
    const runs = await warehouse.query(`SELECT outcome, count(*)::INTEGER AS n FROM sync_runs WHERE mode = 'summaries' GROUP BY outcome`);
    expect(runs).toEqual([{ outcome: 'succeeded', n: 12 }]);
  });

  it('with SALESYNC_SUMMARIES_FINAL declared, a log whose summaries are all final is not read again', async () => {
    let clock = Date.UTC(2026, 0, 10, 12);
    harness = await startHarness(
      { seed: 44, size: SMALL, now: () => clock, summaryStatuses: { pending: 'queued', final: ['done'] } },
      { summariesFinalStatuses: ['done'] },
    );
    const { sim } = harness;
    const { activity: log } = sim.admin.recordActivity('meeting-logs', sim.admin.truth().records.deals[0]!.id);
    expect((await harness.sync(LOGS)).ok).toBe(true);
    sim.admin.generateSummaries(log.id);
    sim.admin.generateSummaries(log.id);
    clock += HOUR;
    expect((await harness.sync(LOGS)).ok).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, sim, LOGS);
    for (let hour = 0; hour < 3; hour++) {
      clock += 4 * HOUR;
      sim.admin.resetStats();
      expect((await harness.sync(LOGS)).ok).toBe(true);
      expect(sim.admin.stats().byRoute['GET /v1/meeting-logs/{id}/'] ?? 0).toBe(0);
    }
  });

  it('`summaries` re-reads on its own (shorter) spacing, for frequent polling between syncs', async () => {
    let clock = Date.UTC(2026, 0, 10, 12);
    harness = await startHarness({ seed: 45, size: SMALL, now: () => clock });
    const { sim } = harness;
    const { activity: log } = sim.admin.recordActivity('meeting-logs', sim.admin.truth().records.deals[0]!.id);
    expect((await harness.sync(LOGS)).ok).toBe(true);
    sim.admin.generateSummaries(log.id);
    clock += 5 * 60_000;
    const env = summariesEnv(harness);
    const polled = await refreshSummaries(env.deps, { ...env.settings, summaries: { ...env.settings.summaries, recheckMs: 5 * 60_000 } });
    expect(polled).toMatchObject({ outcome: 'succeeded', candidates: 1, details: 1, summariesChanged: 1 });
    await expectMirrorsTruth(harness.env().warehouse, sim, LOGS);
  });

  it("a single view older than the warehouse's row (a replica behind) does not take the log's summaries back: the log stays due and the next read writes it", async () => {
    let clock = Date.UTC(2026, 0, 10, 12);
    harness = await startHarness({ seed: 46, size: SMALL, now: () => clock, summaryStatuses: { pending: 'queued', final: ['done'] } });
    const { sim } = harness;
    const { activity: log } = sim.admin.recordActivity('meeting-logs', sim.admin.truth().records.deals[0]!.id);
    expect((await harness.sync(LOGS)).ok).toBe(true);
    // A replica stops here: it will show the log as it was, with no summaries.
    sim.admin.keepReplica();
    clock += 60_000;
    sim.admin.updateRecord('meeting-logs', log.id, { meeting_name: 'renamed after the replica stopped' });
    sim.admin.generateSummaries(log.id);
    clock += HOUR;
    expect((await harness.sync(LOGS)).ok).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, sim, LOGS);

    // The re-read, due an hour on, meets the replica.
    sim.admin.routeSingleViews('replica');
    clock += 2 * HOUR;
    const stale = await processSummariesJob(summariesEnv(harness));
    expect(stale).toMatchObject({ outcome: 'succeeded', candidates: 1, behind: 1, summariesChanged: 0 });
    await expectMirrorsTruth(harness.env().warehouse, sim, LOGS);

    sim.admin.routeSingleViews('primary');
    sim.admin.generateSummaries(log.id);
    const caughtUp = await processSummariesJob(summariesEnv(harness));
    expect(caughtUp).toMatchObject({ outcome: 'succeeded', candidates: 1, behind: 0, summariesChanged: 1 });
    await expectMirrorsTruth(harness.env().warehouse, sim, LOGS);
  });

  it('a window of zero leaves every log alone', async () => {
    harness = await startHarness({ seed: 42, size: SMALL });
    const deal = harness.sim.admin.truth().records.deals[0]!;
    harness.sim.admin.recordActivity('meeting-logs', deal.id);
    expect((await harness.sync(LOGS)).ok).toBe(true);
    // The Date header has second precision, so a log recorded in this second may still count: step past it.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const result = await processSummariesJob(summariesEnv(harness), { windowMs: 0 });
    expect(result).toMatchObject({ outcome: 'succeeded', candidates: 0, details: 0 });
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
    expect(deep.results[0]).toMatchObject({
      outcome: 'succeeded',
      summariesChanged: 1,
      changed: 0,
      written: 0,
      details: SMALL.meetingLogs,
    });
    await expectMirrorsTruth(warehouse, sim, LOGS);
  });

  it('a log marked deleted that the list shows again has its single view read: its summaries are current, not those of before', async () => {
    harness = await startHarness({ seed: 44, size: SMALL });
    const { sim } = harness;
    expect((await harness.sync(LOGS)).ok).toBe(true);
    const warehouse = harness.env().warehouse;
    const truth = sim.admin.truth();
    const log = truth.records['meeting-logs'].find((r) => (truth.summaries[r.id]?.length ?? 0) > 0)!;
    // Marked deleted by a sweep (a single not_found to its confirming GET), while the service still has it.
    await warehouse.completeSweep('meeting-logs', {
      key: 'meeting-logs#reconcile',
      stateKey: 'meeting-logs#reconcile',
      deletedIds: [log.id],
      deletedAt: new Date().toISOString(),
      completedAt: new Date().toISOString(),
    });
    sim.admin.generateSummaries(log.id);

    const plain = await processReconcileJob(harness.env(), { resource: 'meeting-logs' });
    expect(plain.results[0]).toMatchObject({ outcome: 'succeeded', details: 1 });
    await expectMirrorsTruth(warehouse, sim, LOGS);
  });

  it("selection integers past 2^31 (the spec gives them no range) are mirrored, and the log's batch commits", async () => {
    let clock = Date.UTC(2026, 0, 10, 12);
    harness = await startHarness({ seed: 45, size: SMALL, now: () => clock });
    const { sim } = harness;
    const { activity: log } = sim.admin.recordActivity('meeting-logs', sim.admin.truth().records.deals[0]!.id);
    expect((await harness.sync(LOGS)).ok).toBe(true);
    const selections = [{ value: 'hot', level: 3_000_000_000, order: 1_736_467_200_000 }];
    sim.admin.setSummaries(log.id, [
      { summary_type: 'temperature', result_type: 'select', text: null, selections, reason: '', status: 'completed' },
    ]);
    sim.admin.updateRecord('meeting-logs', log.id, { meeting_name: 'moved' });
    clock += HOUR;
    expect((await harness.sync(LOGS)).ok).toBe(true);
    await expectMirrorsTruth(harness.env().warehouse, sim, LOGS);
  });

  it('summaries given in another order on each read (the spec fixes none) are unchanged: the log is read less and less, and never rewritten', async () => {
    let clock = Date.UTC(2026, 0, 10, 12);
    harness = await startHarness({ seed: 46, size: SMALL, now: () => clock, rotatingSummaries: true });
    const { sim } = harness;
    const { activity: log } = sim.admin.recordActivity('meeting-logs', sim.admin.truth().records.deals[0]!.id);
    const kinds = ['temperature', 'next_step', 'risk'].map((summary_type) => ({
      summary_type,
      result_type: 'text',
      text: `${summary_type} notes`,
      selections: [],
      reason: '',
      status: 'completed',
    }));
    sim.admin.setSummaries(log.id, kinds);
    const warehouse = harness.env().warehouse;
    expect((await harness.sync(LOGS)).ok).toBe(true);
    const reads = [];
    for (let hour = 0; hour < 8; hour++) {
      clock += HOUR;
      sim.admin.resetStats();
      expect((await harness.sync(LOGS)).ok).toBe(true);
      reads.push(sim.admin.stats().byRoute['GET /v1/meeting-logs/{id}/'] ?? 0);
    }
    expect(reads).toEqual([1, 0, 1, 0, 0, 0, 1, 0]);
    expect(await warehouse.query(`SELECT sum(changed)::INTEGER AS n FROM sync_runs WHERE mode = 'summaries'`)).toEqual([{ n: 0 }]);
    await expectMirrorsTruth(warehouse, sim, LOGS);
  });
});
