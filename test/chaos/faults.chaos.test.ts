/**
 * The service and the machine misbehaving, short of a kill: faulted responses, a slow service, a reader holding the
 * warehouse file, a full disk. Each ends exact against the simulator's ground truth, or fails with one line naming
 * the cause, losing nothing, and the next run is exact.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, statfsSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { Config } from '../../src/config.js';
import type { SyncReport } from '../../src/sync/index.js';
import { openWarehouse, writerPathFor } from '../../src/warehouse/index.js';
import type { Warehouse } from '../../src/warehouse/types.js';
import { cliEnv } from '../support/cli.js';
import { expectOneLineFailure, runCliWithFileSizeLimit, runCliWithin } from '../support/cli-runs.js';
import { holdDuckDb, type DuckDbHolder } from '../support/duckdb-holder.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';
import { expectNothingLost, frozenTruth, truthAsOf } from '../support/nothing-lost.js';
import { chaosReport, chaosTrials } from './chaos-settings.js';

/** Changes an incremental walk can see (links, summaries and deletions are reconcile's job). */
const VISIBLE_CHANGES = ['update', 'same-value', 'create', 'activity'] as const;

let harness: Harness | undefined;
const holders: DuckDbHolder[] = [];
afterEach(async () => {
  await Promise.all(holders.splice(0).map((h) => h.leave()));
  await harness?.close();
  harness = undefined;
});

/** A read-only handle on a warehouse file, for checking it from the test (released after each query). */
function reader(path: string): Warehouse {
  return openWarehouse({ path, lockTimeoutMs: 10_000, logger: pino({ level: 'silent' }) });
}

function failures(report: SyncReport): string {
  return report.results
    .filter((r) => r.error)
    .map((r) => `${r.resource}: ${r.error!.code}: ${r.error!.message}`)
    .join('\n');
}

describe('faulted responses', () => {
  // 10 % of responses faulted, spread over every kind a flaky service or proxy produces.
  const FAULTS = { errorRate: 0.03, timeoutRate: 0.01, resetRate: 0.02, malformedRate: 0.02, htmlErrorRate: 0.02 };
  const SIZE = { deals: 500, companies: 200, contacts: 700, meetingLogs: 40, contactActivities: 300, users: 10 };

  it('with 10 % of responses faulted, every first sync and every incremental sync after changes ends exact', async () => {
    harness = await startHarness({ seed: 401, size: SIZE });
    const sim = harness.sim;
    const trials = chaosTrials();
    // Short timeouts and backoff: a held request costs 1.5 s, not the default 30 s.
    const config: Partial<Config> = { requestTimeoutMs: 1500, retryBaseDelayMs: 20, retryLimit: 5 };
    let requests = 0;
    let retries = 0;
    const faults: Record<string, number> = {};
    for (let trial = 0; trial < trials; trial++) {
      const warehousePath = join(harness.dir, `faults-${trial}.duckdb`);
      sim.admin.setFaults({ ...FAULTS, seed: 4100 + trial });
      sim.admin.resetStats();
      const first = await harness.sync({ config: { ...config, warehousePath } });
      expect(first.ok, `trial ${trial}, first sync:\n${failures(first)}`).toBe(true);
      sim.admin.mutateRandom(25, 4200 + trial, [...VISIBLE_CHANGES]);
      const second = await harness.sync({ config: { ...config, warehousePath } });
      expect(second.ok, `trial ${trial}, incremental sync:\n${failures(second)}`).toBe(true);
      const stats = sim.admin.stats();
      requests += stats.total;
      for (const [kind, n] of Object.entries(stats.faults)) faults[kind] = (faults[kind] ?? 0) + n;
      retries += [...first.results, ...second.results].reduce((sum, r) => sum + r.retries, 0);
      await expectMirrorsTruth(reader(warehousePath), sim);
    }
    const injected = Object.values(faults).reduce((a, b) => a + b, 0);
    chaosReport('10% faulted responses, first + incremental sync', {
      trials,
      syncs: trials * 2,
      exact: trials,
      requests,
      faultsInjected: injected,
      faultedShare: (injected / requests).toFixed(3),
      faultsByKind: Object.entries(faults)
        .map(([k, n]) => `${k}:${n}`)
        .join(' '),
      walkRetries: retries,
      // Requests beyond what the same syncs need without faults: each fault answered instead of the request.
      extraRequestsPct: ((100 * injected) / (requests - injected)).toFixed(1),
    });
    expect(injected).toBeGreaterThan(0.05 * requests);
  });
});

describe('a slow service', () => {
  const SIZE = { deals: 150, companies: 60, contacts: 200, meetingLogs: 16, contactActivities: 80, users: 6 };

  it('with latency close to the request timeout, a run completes exact or fails with one line naming the timeout, and the rerun is exact', async () => {
    harness = await startHarness({ seed: 402, size: SIZE });
    const sim = harness.sim;
    const env = cliEnv(harness, { SALES_API_RETRY_DELAY: '20ms' });
    expect((await runCliWithin(['sync'], env)).code).toBe(0);
    const outcomes: string[] = [];

    // 300–500 ms per answer against a 450 ms timeout: a quarter of the attempts time out, and a request fails
    // when all three of its attempts do, so some runs complete and some do not.
    let synced = frozenTruth(sim);
    sim.admin.mutateRandom(15, 4021, [...VISIBLE_CHANGES]);
    sim.admin.setFaults({ latencyMs: 300, latencyJitterMs: 200, seed: 4022 });
    let runs = 1;
    const close = await runCliWithin(['sync'], { ...env, SALES_API_TIMEOUT: '450ms', SALES_API_RETRIES: '2' });
    if (close.code === 0) {
      await expectMirrorsTruth(reader(harness.config.warehousePath), sim);
      outcomes.push('near-timeout: completed exact');
    } else {
      expect(expectOneLineFailure(close, 'timeout')).toMatch(/timed out after 450 ms, 3 attempts/);
      await expectNothingLost(reader(harness.config.warehousePath), synced, sim.admin.truth());
      outcomes.push('near-timeout: failed with timeout');
      // Back to exact before the next case, so that its check knows which versions the warehouse may hold.
      sim.admin.clearFaults();
      expect((await runCliWithin(['sync'], env)).code).toBe(0);
      runs += 1;
      await expectMirrorsTruth(reader(harness.config.warehousePath), sim);
    }

    // A service that stops answering one path mid-run: the other walks commit, that one fails, naming it.
    synced = frozenTruth(sim);
    sim.admin.mutateRandom(15, 4023, [...VISIBLE_CHANGES]);
    sim.admin.setFaults({ latencyMs: 300 });
    sim.admin.failNext(2, 'timeout', '/v1/contacts/');
    runs += 1;
    const stuck = await runCliWithin(['sync'], { ...env, SALES_API_TIMEOUT: '1s', SALES_API_RETRIES: '1' });
    expect(expectOneLineFailure(stuck, 'timeout')).toMatch(/GET \/v1\/contacts\/\S* on \S+ timed out after 1000 ms, 2 attempts/);
    const kept = await expectNothingLost(reader(harness.config.warehousePath), synced, sim.admin.truth());
    outcomes.push(`one path stuck: failed with timeout, ${kept.newer} newer rows committed meanwhile`);

    // Still slow, but within a timeout that fits it: the rerun is exact.
    runs += 1;
    const rerun = await runCliWithin(['sync'], { ...env, SALES_API_TIMEOUT: '5s' });
    expect(rerun.code, rerun.stderr).toBe(0);
    await expectMirrorsTruth(reader(harness.config.warehousePath), sim);
    chaosReport('slow service (300-500 ms latency)', { runs, outcomes: outcomes.join('; '), rerunExact: 'yes' });
  });
});

describe('a reader holding the warehouse file', () => {
  const SIZE = { deals: 150, companies: 60, contacts: 200, meetingLogs: 10, contactActivities: 80, users: 6 };

  // The analysts' file (WAREHOUSE_PATH) is never held by salesync, so holding it blocks nothing: what can still be
  // held by another process is the writer's own file (a DuckDB client pointed at it by mistake).
  it("the writer's file held for the whole run: the sync waits, fails with warehouse_locked naming the holder, loses nothing; after the holder leaves the rerun is exact", async () => {
    harness = await startHarness({ seed: 403, size: SIZE });
    const sim = harness.sim;
    const env = cliEnv(harness);
    expect((await runCliWithin(['sync'], env)).code).toBe(0);
    const synced = frozenTruth(sim);
    sim.admin.mutateRandom(20, 4031, [...VISIBLE_CHANGES]);

    const holder = await holdDuckDb(writerPathFor(harness.config.warehousePath));
    holders.push(holder);
    const started = Date.now();
    const locked = await runCliWithin(['sync'], { ...env, SALESYNC_LOCK_TIMEOUT: '3s' });
    const waitedMs = Date.now() - started;
    const line = expectOneLineFailure(locked, 'warehouse_locked');
    expect(line).toContain(`(PID ${holder.pid})`);
    expect(waitedMs).toBeGreaterThanOrEqual(3000);
    // The wait was announced while it happened, naming who to look at.
    expect(locked.stdout).toMatch(new RegExp(`"holderPid":${holder.pid}.*"msg":"warehouse file is held by another process; waiting"`));
    // The reader saw the file as it was all along.
    expect(await holder.countDeals()).toBe(holder.dealsAtOpen);
    await holder.leave();

    // The failed run wrote nothing: the warehouse is exactly what the first sync left.
    await expectMirrorsTruth(reader(harness.config.warehousePath), truthAsOf(synced));
    const rerun = await runCliWithin(['sync'], env);
    expect(rerun.code, rerun.stderr).toBe(0);
    await expectMirrorsTruth(reader(harness.config.warehousePath), sim);

    // A reader that leaves while the writer waits: the same sync proceeds and completes.
    sim.admin.mutateRandom(20, 4032, [...VISIBLE_CHANGES]);
    const brief = await holdDuckDb(writerPathFor(harness.config.warehousePath));
    holders.push(brief);
    // It leaves once the sync says it is waiting (however long the process takes to get there on a busy machine).
    const waited = await runCliWithin(['sync'], { ...env, SALESYNC_LOCK_TIMEOUT: '60s' }, 120_000, (stdout) => {
      const timer = setInterval(() => {
        if (!stdout().includes('"msg":"warehouse file is held by another process; waiting"')) return;
        clearInterval(timer);
        void brief.leave();
      }, 20);
    });
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toContain(`"holderPid":${brief.pid}`);
    await expectMirrorsTruth(reader(harness.config.warehousePath), sim);

    chaosReport('reader holding the warehouse', {
      heldWholeRun: `warehouse_locked naming PID after ${(waitedMs / 1000).toFixed(1)} s, nothing lost, rerun exact`,
      heldUntilTheSyncWaited: 'sync waited, then completed exact',
    });
  });

  it('readers querying in a loop during a run and a BI tool holding the snapshot never block the sync; the snapshot is exact after it', async () => {
    harness = await startHarness({ seed: 404, size: SIZE });
    const sim = harness.sim;
    const snapshotPath = join(harness.dir, 'bi', 'snapshot.duckdb');
    const env = cliEnv(harness, { WAREHOUSE_SNAPSHOT_PATH: snapshotPath });
    expect((await runCliWithin(['sync'], env)).code).toBe(0);
    await expectMirrorsTruth(reader(snapshotPath), sim);
    const dealsBefore = sim.admin.truth().records.deals.length;

    // A BI tool keeps the snapshot open for the whole next run (the supported path for long-lived readers).
    const bi = await holdDuckDb(snapshotPath);
    holders.push(bi);
    for (let i = 0; i < 30; i++) sim.admin.createRecord('deals', { name: `created during the BI session ${i}` });
    sim.admin.mutateRandom(20, 4041, [...VISIBLE_CHANGES]);
    // Slow enough that the run lasts a few seconds and the queries land inside it.
    sim.admin.setFaults({ latencyMs: 250 });
    const sync = runCliWithin(['sync'], env);
    let finished = false;
    void sync.then(() => (finished = true));
    let queries = 0;
    let queriesDuringRun = 0;
    while (!finished) {
      const q = await runCliWithin(['query', 'SELECT count(*) AS n FROM deals', '--json'], cliEnv(harness));
      // Started while the sync ran (it may have waited for one of the sync's commits to close the file).
      queriesDuringRun += 1;
      expect(q.code, q.stderr).toBe(0);
      queries += 1;
    }
    const run = await sync;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('"msg":"snapshot published"');
    await expectMirrorsTruth(reader(harness.config.warehousePath), sim);

    // The BI tool still reads its old, consistent copy; whoever opens the path now gets the new one, exact.
    expect(await bi.countDeals()).toBe(dealsBefore);
    await bi.leave();
    await expectMirrorsTruth(reader(snapshotPath), sim);
    chaosReport('readers during a run', {
      queriesStartedDuringRun: queriesDuringRun,
      queriesSucceeded: queries,
      syncExit: run.code ?? -1,
      snapshotHeldOld: dealsBefore,
      snapshotExactAfter: 'yes',
    });
    expect(queriesDuringRun).toBeGreaterThan(0);
  });
});

describe('a disk that fills up', () => {
  const SIZE = { deals: 1200, companies: 300, contacts: 1500, meetingLogs: 20, contactActivities: 500, users: 8 };

  /** Enough new and changed rows that the run's WAL outgrows any small limit after a few commits. */
  function growTheService(h: Harness, seed: number): void {
    for (let i = 0; i < 800; i++) h.sim.admin.createRecord('deals', { name: `deal added before the disk filled ${seed}-${i}` });
    h.sim.admin.mutateRandom(300, seed, ['update', 'create']);
  }

  it('under a file-size limit: one line warehouse_disk_full, no stack, no hang; what was committed stays intact; the next run is exact', async () => {
    harness = await startHarness({ seed: 405, size: SIZE });
    const sim = harness.sim;
    const env = cliEnv(harness, { SALESYNC_FLUSH_ROWS: '200' });
    expect((await runCliWithin(['sync'], env)).code).toBe(0);
    const fileBytes = statSync(harness.config.warehousePath).size;
    const synced = frozenTruth(sim);
    growTheService(harness, 4051);

    // Every file the run writes stops at 256 KiB: the WAL fills after a few commits.
    const started = Date.now();
    const full = await runCliWithFileSizeLimit(256, ['sync'], env);
    const tookMs = Date.now() - started;
    const line = expectOneLineFailure(full, 'warehouse_disk_full');
    // The first file past the limit is the WAL (DuckDB's words, and the warehouse's path) or a batch's stage file
    // (Node's EFBIG, and the temporary directory it is in): the line names the disk that filled.
    if (line.includes('EFBIG')) expect(line).toContain(`stage files ${tmpdir()} (TMPDIR)`);
    else expect(line).toContain(writerPathFor(harness.config.warehousePath));
    expect(line).toMatch(/file too large/i);

    // A WAL left behind holds committed rows: it is as private as the writer's file.
    const wal = `${writerPathFor(harness.config.warehousePath)}.wal`;
    const walLeft = existsSync(wal);
    if (walLeft) expect(statSync(wal).mode & 0o777).toBe(0o600);
    // The file opens, and every row in it is a version the service had; nothing committed earlier is gone.
    const kept = await expectNothingLost(reader(harness.config.warehousePath), synced, sim.admin.truth());

    const rerun = await runCliWithin(['sync'], env);
    expect(rerun.code, rerun.stderr).toBe(0);
    await expectMirrorsTruth(reader(harness.config.warehousePath), sim);
    chaosReport('disk full (ulimit -f 256 KiB)', {
      fileBytesBefore: fileBytes,
      failedAfterMs: tookMs,
      newerRowsCommittedBeforeFull: kept.newer,
      walLeftBehind: walLeft ? 'yes (0600)' : 'no',
      rerunExact: 'yes',
    });
  });

  // A real ENOSPC needs a small file system: a tmpfs, which only root (with CAP_SYS_ADMIN) can mount.
  const mountable = canMountTmpfs();
  it.skipIf(!mountable)(
    'on a full tmpfs (real ENOSPC): one line warehouse_disk_full; intact; after space is freed the next run is exact',
    async () => {
      harness = await startHarness({ seed: 406, size: SIZE });
      const sim = harness.sim;
      const mount = join(harness.dir, 'small-disk');
      mkdirSync(mount);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mount]);
      try {
        const warehousePath = join(mount, 'warehouse.duckdb');
        const env = cliEnv(harness, { WAREHOUSE_PATH: warehousePath, SALESYNC_FLUSH_ROWS: '200' });
        expect((await runCliWithin(['sync'], env)).code).toBe(0);
        const synced = frozenTruth(sim);
        growTheService(harness, 4061);
        // Shrink the disk to what is used plus 256 KiB.
        const fs = statfsSync(mount);
        const usedKib = Math.ceil(((fs.blocks - fs.bfree) * fs.bsize) / 1024);
        execFileSync('mount', ['-o', `remount,size=${usedKib + 256}k`, mount]);

        const full = await runCliWithin(['sync'], env);
        const line = expectOneLineFailure(full, 'warehouse_disk_full');
        expect(line).toMatch(/No space left on device|no space left for DuckDB's temporary files/);
        const kept = await expectNothingLost(reader(warehousePath), synced, sim.admin.truth());

        execFileSync('mount', ['-o', 'remount,size=64m', mount]);
        const rerun = await runCliWithin(['sync'], env);
        expect(rerun.code, rerun.stderr).toBe(0);
        await expectMirrorsTruth(reader(warehousePath), sim);
        chaosReport('disk full (tmpfs, ENOSPC)', { freeKib: 256, newerRowsCommittedBeforeFull: kept.newer, rerunExact: 'yes' });
      } finally {
        execFileSync('umount', [mount]);
      }
    },
  );
});

function canMountTmpfs(): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  const probe = join('/tmp', `salesync-mount-probe-${process.pid}`);
  try {
    mkdirSync(probe, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    try {
      execFileSync('rmdir', [probe], { stdio: 'ignore' });
    } catch {
      // left for the OS's tmp cleaning
    }
  }
}
