/**
 * kill -9 over an unkind service: each trial draws its mix of what the spec leaves open (`unkind-mix.ts`), and the
 * syncs that walk it while records change are killed at random moments, so walks resume from checkpoints taken over
 * moving, overlapping, reordered lists. The changes are those that move an `updated_at` (no relinks, no deletions),
 * so whatever the mix and the moment, once the service goes quiet a sync alone settles every walk and leaves the
 * warehouse equal to the service, field by field (a record whose id was the broken part waits for the reconcile);
 * a reconcile after it keeps it so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_KEYS } from '../../src/simulator/index.js';
import { cliEnv, runCli } from '../support/cli.js';
import type { Harness } from '../support/harness.js';
import { chaosReport, chaosSeed, chaosTrialNumbers } from './chaos-settings.js';
import {
  changeDefinitionBetweenSyncs,
  changeWhileWalking,
  expectQuietTruth,
  failures,
  goQuiet,
  POOL,
  startTrial,
  TRIAL_CONFIG,
} from './unkind-mix.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** Exit codes a run may end with while records change: done, or done with broken records in quarantine. */
const FINISHED = [0, 3];

describe('kill -9 over an unkind service at random', () => {
  it('syncs killed anywhere over whatever mix a trial draws, records changing meanwhile, leave the exact truth after one quiet sync', async () => {
    const numbers = chaosTrialNumbers();
    const seed = chaosSeed(209100);
    const figures = { runs: 0, killed: 0, exact: 0 };
    for (const trial of numbers) {
      const trialRun = await startTrial(seed, trial, { stampedOnly: true, latencyMs: 3 });
      const { random, mix, what } = trialRun;
      harness = trialRun.harness;
      const h = harness;
      const idBroken = new Set<string>();
      const env = cliEnv(h, {
        SALES_API_KEY: mix.pooled ? POOL : DEFAULT_KEYS.read,
        SALESYNC_FLUSH_ROWS: '400',
        SALES_API_RETRIES: '6',
        SALES_API_RETRY_DELAY: '20ms',
        SALES_API_TIMEOUT: '3s',
      });
      // A first sync, its rerun and a full sync, each killed at a random moment of its walks (or let finish).
      for (const [step, args] of [
        ['first sync', ['sync']],
        ['incremental sync', ['sync']],
        ['full sync', ['sync', '--full']],
      ] as const) {
        changeWhileWalking(h, random, 20, { changes: mix.changes, idBroken, definitions: mix.definitions });
        const killAfterMs = 400 + Math.floor(random() * 2000);
        const run = await runCli([...args], env, (kill) => setTimeout(kill, killAfterMs).unref());
        figures.runs += 1;
        if (run.signal === 'SIGKILL') figures.killed += 1;
        else expect(FINISHED, `${what}, ${step}: ${run.stderr}`).toContain(run.code);
      }

      // The service goes quiet; one sync after the kills must leave the truth (`expectQuietTruth`).
      changeDefinitionBetweenSyncs(h, mix.definitions);
      await goQuiet(h);
      const config = TRIAL_CONFIG;
      const quiet = await h.sync({ config });
      expect(quiet.ok, `${what}, quiet sync:\n${failures(quiet)}`).toBe(true);
      await expectQuietTruth(h, quiet, { what, config, changes: mix.changes, idBroken });
      figures.exact += 1;
      await h.close();
      harness = undefined;
    }
    chaosReport('kill -9 over an unkind service at random', { trials: numbers.length, seed, ...figures });
    expect(figures.exact).toBe(numbers.length);
  });
});
