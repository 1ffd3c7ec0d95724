import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RECORD_RESOURCE_NAMES, RESOURCE_NAMES, resourceDescriptor, type RecordResourceName } from '../../src/core/resources.js';
import { createSyncEnvironment, createWarehouse } from '../../src/sync/index.js';
import type { Warehouse } from '../../src/warehouse/types.js';
import { pino } from 'pino';
import { cliEnv, runCli } from '../support/cli.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';
import { chaosReport, chaosTrials, seededRandom } from './chaos-settings.js';

const SIZE = { deals: 900, companies: 300, contacts: 1300, meetingLogs: 60, contactActivities: 500, users: 10 };
const FULL_WALK_PAGES = Object.values(SIZE).reduce((sum, n) => sum + Math.max(1, Math.ceil(n / 200)), 0);
/** A backfill walks one resource: 20 pages of deals, committed one at a time (SALESYNC_FLUSH_ROWS). */
const BACKFILL_SIZE = { deals: 4000, companies: 50, contacts: 50, meetingLogs: 10, contactActivities: 30, users: 5 };
/** A reconcile sweeps every resource: 20 list pages, the deals' 10 the longest walk. */
const RECONCILE_SIZE = { deals: 2000, companies: 300, contacts: 1000, meetingLogs: 40, contactActivities: 400, users: 10 };
const PAGE = 200;
const silent = pino({ level: 'silent' });

describe('kill -9 at random moments', () => {
  let harness: Harness | undefined;
  afterAll(async () => harness?.close());

  it('a sync killed anywhere, with the service changing meanwhile, always reruns to the exact truth and leaves no run marked running', async () => {
    harness = await startHarness({ seed: 301, size: SIZE, faults: { latencyMs: 3 } });
    const sim = harness.sim;
    const random = seededRandom(301);
    const trials = chaosTrials();
    let killed = 0;
    let abandoned = 0;
    let refetchedPages = 0;
    // Kill moments span the whole run, start-up included, and end before a timed run of the same kind did.
    const timing = await timeRun(
      ['sync'],
      cliEnv(harness, { WAREHOUSE_PATH: join(harness.dir, 'timing.duckdb'), SALESYNC_FLUSH_ROWS: '400' }),
    );
    const latestKillMs = Math.max(300, timing.runMs * 0.8);
    for (let trial = 0; trial < trials; trial++) {
      // A fresh warehouse each trial, so every kill lands in a first full load: the longest, busiest run.
      const warehousePath = join(harness.dir, `trial-${trial}.duckdb`);
      const env = cliEnv(harness, { WAREHOUSE_PATH: warehousePath, SALESYNC_FLUSH_ROWS: '400' });
      const killAfterMs = 150 + Math.floor(random() * (latestKillMs - 150));
      sim.admin.resetStats();
      const first = await runCli(['sync'], env, (kill) => setTimeout(kill, killAfterMs).unref());
      if (first.signal === 'SIGKILL') killed += 1;
      else expect(first.code, first.stderr).toBe(0);
      sim.admin.mutateRandom(15, 1000 + trial, ['update', 'same-value', 'create', 'activity']);
      const rerun = await runCli(['sync'], env);
      expect(rerun.code, rerun.stderr).toBe(0);
      const warehouse = createSyncEnvironment({ ...harness.config, warehousePath }, { logger: pino({ level: 'silent' }) }).warehouse;
      await expectMirrorsTruth(warehouse, sim);
      abandoned += await expectNoRunLeftRunning(warehouse);
      // Pages of the killed run and its rerun beyond one whole walk: what the kill cost (it includes the
      // rerun's one-page incremental walks of resources the killed run had already finished).
      refetchedPages += Math.max(0, listPages(sim.admin.stats().byRoute) - FULL_WALK_PAGES);
    }
    chaosReport('kill -9 during sync', {
      trials,
      killedMidRun: killed,
      runsMarkedAbandoned: abandoned,
      extraPagesPerTrial: (refetchedPages / trials).toFixed(1),
      pagesPerFullWalk: FULL_WALK_PAGES,
    });
    expect(killed).toBeGreaterThan(trials / 2);
  });

  it('a backfill killed anywhere, with the service changing meanwhile, resumes from its own checkpoint to the exact truth and never moves the watermark', async () => {
    await harness?.close();
    // Pages slow enough that the walk, not the process start, takes most of a run: kills land in it.
    harness = await startHarness({ seed: 302, size: BACKFILL_SIZE, faults: { latencyMs: 25 } });
    const sim = harness.sim;
    const random = seededRandom(302);
    const trials = chaosTrials();
    let killed = 0;
    let resumed = 0;
    let abandoned = 0;
    let refetchedPages = 0;
    let pagesPerWalk = 0;
    // Timed as the trials run: one commit per page.
    const timing = await timeRun(
      ['backfill', 'deals', '--wait'],
      cliEnv(harness, { WAREHOUSE_PATH: join(harness.dir, 'backfill-timed.duckdb'), SALESYNC_FLUSH_ROWS: String(PAGE) }),
    );
    for (let trial = 0; trial < trials; trial++) {
      // A fresh warehouse each trial: the kill lands in a first load, where a lost page would be a missing row.
      const warehousePath = join(harness.dir, `backfill-${trial}.duckdb`);
      const env = cliEnv(harness, { WAREHOUSE_PATH: warehousePath, SALESYNC_FLUSH_ROWS: String(PAGE) });
      const killAfterMs = killMoment(timing, random);
      sim.admin.resetStats();
      const first = await runCli(['backfill', 'deals', '--wait'], env, (kill) => setTimeout(kill, killAfterMs).unref());
      if (first.signal === 'SIGKILL') killed += 1;
      else expect(first.code, first.stderr).toBe(0);
      // Changes that move updated_at, so the resumed walk meets them past its cursor (link changes and deletions
      // move nothing: finding those is reconcile's job, not a backfill's).
      sim.admin.mutateRandom(15, 2000 + trial, ['update', 'same-value', 'create', 'activity']);
      const rerun = await runCli(['backfill', 'deals', '--wait'], env);
      expect(rerun.code, rerun.stderr).toBe(0);
      if (/backfill of deals: succeeded \(resumed\)/.test(rerun.stdout)) resumed += 1;
      const warehouse = createWarehouse({ ...harness.config, warehousePath }, silent);
      await expectMirrorsTruth(warehouse, sim, { resources: ['deals'], users: false });
      abandoned += await expectNoRunLeftRunning(warehouse);
      // The incremental walk's state is not the backfill's to touch, killed or not.
      expect(await warehouse.readState('deals')).toMatchObject({ watermark: null, walk: null, lastCompletedAt: null });
      pagesPerWalk = pagesOf(sim.admin.truth().records.deals.length);
      refetchedPages += Math.max(0, (sim.admin.stats().byRoute['GET /v1/deals/'] ?? 0) - pagesPerWalk);
    }
    chaosReport('kill -9 during backfill', {
      trials,
      killedMidRun: killed,
      resumedFromCheckpoint: resumed,
      runsMarkedAbandoned: abandoned,
      extraPagesPerTrial: (refetchedPages / trials).toFixed(1),
      pagesPerFullWalk: pagesPerWalk,
    });
    expect(killed).toBeGreaterThan(trials / 2);
    // Kills drawn in the walk: some must land past a commit, or resuming is not what was tested. How many do turns on
    // the machine's speed (12 of 20 idle, 2 of 10 beside two busy loops and two other chaos files).
    if (trials >= 10) expect(resumed, 'trials whose rerun resumed from the checkpoint').toBeGreaterThan(0);
  });

  it('a reconcile killed anywhere, with records deleted and relinked meanwhile, never marks a live record deleted, and its rerun (resumed, then swept afresh) leaves the exact truth', async () => {
    await harness?.close();
    harness = await startHarness({ seed: 303, size: RECONCILE_SIZE, faults: { latencyMs: 3 } });
    const sim = harness.sim;
    const random = seededRandom(303);
    const trials = chaosTrials();
    // One warehouse for every trial, as in production: each trial's changes are drift for its sweeps to find.
    const warehousePath = join(harness.dir, 'reconcile.duckdb');
    const env = cliEnv(harness, { WAREHOUSE_PATH: warehousePath, SALESYNC_FLUSH_ROWS: String(PAGE) });
    const synced = await runCli(['sync'], env);
    expect(synced.code, synced.stderr).toBe(0);
    const timing = await timeRun(['reconcile'], env);
    const warehouse = createWarehouse({ ...harness.config, warehousePath }, silent);
    // Every kind of change but regenerated summaries, which only `reconcile --deep` and `summaries` fetch.
    const kinds = ['update', 'same-value', 'create', 'activity', 'link', 'delete'] as const;
    let killed = 0;
    let resumed = 0;
    let abandoned = 0;
    let deletedAfterKill = 0;
    let refetchedPages = 0;
    for (let trial = 0; trial < trials; trial++) {
      sim.admin.mutateRandom(20, 3000 + trial, [...kinds]);
      const killAfterMs = killMoment(timing, random);
      sim.admin.resetStats();
      const first = await runCli(['reconcile'], env, (kill) => setTimeout(kill, killAfterMs).unref());
      if (first.signal === 'SIGKILL') killed += 1;
      else expect(first.code, first.stderr).toBe(0);

      const deleted = deleteSome(sim, random, 3);
      const changes = sim.admin.mutateRandom(15, 4000 + trial, [...kinds]);
      deletedAfterKill += deleted.length + changes.filter((m) => m.kind === 'delete').length;

      const rerun = await runCli(['reconcile'], env);
      expect(rerun.code, rerun.stderr).toBe(0);
      if (resumedResources(rerun.stdout).size > 0) resumed += 1;
      refetchedPages += Math.max(0, recordListPages(sim.admin.stats().byRoute) - fullSweepPages(sim));
      // A resumed sweep is followed by a fresh one, and a fresh one's candidates are every row it did not list:
      // every vanished record is marked, and no live one.
      const truth = sim.admin.truth();
      for (const resource of RECORD_RESOURCE_NAMES) {
        const expected = truth.records[resource].map((r) => r.id).sort();
        expect(await liveIds(warehouse, resource), `${resource} after the rerun of trial ${trial}`).toEqual(expected);
      }

      const again = await runCli(['reconcile'], env);
      expect(again.code, again.stderr).toBe(0);
      await expectMirrorsTruth(warehouse, sim);
      abandoned += await expectNoRunLeftRunning(warehouse);
    }
    chaosReport('kill -9 during reconcile', {
      trials,
      killedMidRun: killed,
      resumedFromCheckpoint: resumed,
      runsMarkedAbandoned: abandoned,
      deletedAfterKill,
      extraPagesPerTrial: (refetchedPages / trials).toFixed(1),
      pagesPerFullSweep: fullSweepPages(sim),
    });
    expect(killed).toBeGreaterThan(trials / 2);
    // A sweep commits one resource at a time: most kills land before its first commit or after its last.
    if (trials >= 10) expect(resumed, 'trials whose rerun resumed from the checkpoint').toBeGreaterThan(0);
  });
});

/**
 * After a rerun no run is left 'running': the killed process's runs are marked abandoned by the rerun's first
 * start. Returns how many of this trial's runs were (they are counted once: marked rows are not counted again).
 */
async function expectNoRunLeftRunning(warehouse: Warehouse): Promise<number> {
  const rows = await warehouse.query(`SELECT outcome, count(*) AS n FROM sync_runs WHERE outcome IN ('running', 'abandoned') GROUP BY ALL`);
  const count = (outcome: string) => Number(rows.find((r) => r.outcome === outcome)?.n ?? 0);
  expect(count('running'), 'runs left running after the rerun').toBe(0);
  const abandoned = count('abandoned') - (counted.get(warehouse) ?? 0);
  counted.set(warehouse, count('abandoned'));
  return abandoned;
}
const counted = new WeakMap<Warehouse, number>();

function listPages(byRoute: Record<string, number>): number {
  return RESOURCE_NAMES.reduce((sum, r) => sum + (byRoute[`GET /v1/${r}/`] ?? 0), 0);
}

interface RunTiming {
  runMs: number;
  /** When the first walk started: before it the process loads, opens the file and checks the connection. */
  walkAtMs: number;
}

/** How a whole run of `args` goes on this machine: kill moments are drawn from it, however fast the machine. */
async function timeRun(args: string[], env: Record<string, string>): Promise<RunTiming> {
  const started = Date.now();
  const run = await runCli(args, env);
  expect(run.code, run.stderr).toBe(0);
  const firstWalk = run.stdout.split('\n').find((line) => /"msg":"walk started"/.test(line));
  // Without it every kill moment would be drawn from the whole run, mostly the start-up: few kills would land in a walk.
  expect(firstWalk, `no "walk started" line in the timed run's output:\n${run.stdout.slice(0, 2000)}`).toBeDefined();
  const walkAtMs = Date.parse((JSON.parse(firstWalk!) as { time: string }).time) - started;
  return { runMs: Date.now() - started, walkAtMs };
}

/**
 * A moment late in the start-up or during the walk (the sync test above covers kills early in the start-up).
 * It ends well before the timed run did: a later run is often faster (warm caches), and a kill after its end
 * tests nothing.
 */
function killMoment(timing: RunTiming, random: () => number): number {
  const from = timing.walkAtMs * 0.9;
  const to = timing.walkAtMs + (timing.runMs - timing.walkAtMs) * 0.7;
  return Math.floor(from + (to - from) * random());
}

function pagesOf(records: number): number {
  return Math.max(1, Math.ceil(records / PAGE));
}

/** List pages of the record resources (users are listed whole by every run, and answer the connection check). */
function recordListPages(byRoute: Record<string, number>): number {
  return RECORD_RESOURCE_NAMES.reduce((sum, r) => sum + (byRoute[`GET /v1/${r}/`] ?? 0), 0);
}

/** List pages of one complete sweep of the record resources at the service's current size. */
function fullSweepPages(sim: Harness['sim']): number {
  const truth = sim.admin.truth();
  return RECORD_RESOURCE_NAMES.reduce((sum, r) => sum + pagesOf(truth.records[r].length), 0);
}

/** Delete `count` records of seeded random resources, as the service's users would. */
function deleteSome(sim: Harness['sim'], random: () => number, count: number): Array<{ resource: RecordResourceName; id: string }> {
  const truth = sim.admin.truth();
  return Array.from({ length: count }, () => {
    const resource = RECORD_RESOURCE_NAMES[Math.floor(random() * RECORD_RESOURCE_NAMES.length)]!;
    const records = truth.records[resource];
    const id = records.splice(Math.floor(random() * records.length), 1)[0]!.id;
    sim.admin.deleteRecord(resource, id);
    return { resource, id };
  });
}

/** The resources whose walk the run's log says resumed from a checkpoint. */
function resumedResources(stdout: string): Set<string> {
  const resumed = new Set<string>();
  for (const line of stdout.split('\n')) {
    if (!line.includes('resuming walk from its checkpoint')) continue;
    const entry = JSON.parse(line) as { resource?: string };
    if (entry.resource) resumed.add(entry.resource);
  }
  return resumed;
}

async function liveIds(warehouse: Warehouse, resource: RecordResourceName): Promise<string[]> {
  const rows = await warehouse.query(`SELECT id FROM "${resourceDescriptor(resource).table}" WHERE _deleted_at IS NULL ORDER BY id`);
  return rows.map((r) => String(r.id));
}
