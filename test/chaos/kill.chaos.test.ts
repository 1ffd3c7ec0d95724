import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RESOURCE_NAMES } from '../../src/core/resources.js';
import { createSyncEnvironment } from '../../src/sync/index.js';
import { pino } from 'pino';
import { cliEnv, runCli } from '../support/cli.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';
import { chaosReport, chaosTrials, seededRandom } from './chaos-settings.js';

const SIZE = { deals: 900, companies: 300, contacts: 1300, meetingLogs: 60, contactActivities: 500, users: 10 };
const FULL_WALK_PAGES = Object.values(SIZE).reduce((sum, n) => sum + Math.max(1, Math.ceil(n / 200)), 0);

describe('kill -9 at random moments', () => {
  let harness: Harness | undefined;
  afterAll(async () => harness?.close());

  it('a sync killed anywhere, with the service changing meanwhile, always reruns to the exact truth', async () => {
    harness = await startHarness({ seed: 301, size: SIZE, faults: { latencyMs: 3 } });
    const sim = harness.sim;
    const random = seededRandom(301);
    const trials = chaosTrials();
    let killed = 0;
    let refetchedPages = 0;
    for (let trial = 0; trial < trials; trial++) {
      // A fresh warehouse each trial, so every kill lands in a first full load: the longest, busiest run.
      const warehousePath = join(harness.dir, `trial-${trial}.duckdb`);
      const env = cliEnv(harness, { WAREHOUSE_PATH: warehousePath, SALESYNC_FLUSH_ROWS: '400' });
      const killAfterMs = 150 + Math.floor(random() * 2500);
      sim.admin.resetStats();
      const first = await runCli(['sync'], env, (kill) => setTimeout(kill, killAfterMs).unref());
      if (first.signal === 'SIGKILL') killed += 1;
      else expect(first.code, first.stderr).toBe(0);
      sim.admin.mutateRandom(15, 1000 + trial, ['update', 'same-value', 'create', 'activity']);
      const rerun = await runCli(['sync'], env);
      expect(rerun.code, rerun.stderr).toBe(0);
      const warehouse = createSyncEnvironment({ ...harness.config, warehousePath }, { logger: pino({ level: 'silent' }) }).warehouse;
      await expectMirrorsTruth(warehouse, sim);
      // Pages of the killed run and its rerun beyond one whole walk: what the kill cost (it includes the
      // rerun's one-page incremental walks of resources the killed run had already finished).
      refetchedPages += Math.max(0, listPages(sim.admin.stats().byRoute) - FULL_WALK_PAGES);
    }
    chaosReport('kill -9 during sync', { trials, killedMidRun: killed, extraPagesPerTrial: (refetchedPages / trials).toFixed(1), pagesPerFullWalk: FULL_WALK_PAGES });
    expect(killed).toBeGreaterThan(trials / 2);
  });
});

function listPages(byRoute: Record<string, number>): number {
  return RESOURCE_NAMES.reduce((sum, r) => sum + (byRoute[`GET /v1/${r}/`] ?? 0), 0);
}
