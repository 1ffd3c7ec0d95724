/**
 * A service as unkind as the spec allows, at random: each trial draws its own mix of what the spec leaves open
 * (`unkind-mix.ts`), and while the syncs walk changes records, renders some broken, expires the cursors given or
 * leads a page back to itself; in some trials a reconcile then marks what was deleted, and records come back from
 * the recycle bin with the `updated_at` they had. Whatever the mix, every run finishes, and once the service goes quiet a sync and a
 * reconcile leave the warehouse equal to it, field by field; in the trials whose changes all move an `updated_at`
 * (half of them), the quiet sync alone does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Harness } from '../support/harness.js';
import { chaosReport, chaosSeed, chaosTrialNumbers } from './chaos-settings.js';
import {
  changeDefinitionBetweenSyncs,
  changeWhileWalking,
  expectQuietTruth,
  failures,
  goQuiet,
  restoreAfterReconcile,
  startTrial,
  TRIAL_CONFIG,
  type Deleted,
} from './unkind-mix.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('an unkind service at random', () => {
  it('whatever mix of what the spec leaves open a trial draws, every run finishes, and once the service is quiet a sync and a reconcile leave the exact truth', async () => {
    const numbers = chaosTrialNumbers();
    const seed = chaosSeed(9100);
    const figures = { syncs: 0, unsettledWalks: 0, passes: 0, walks: 0, restored: 0, exact: 0 };
    for (const trial of numbers) {
      const trialRun = await startTrial(seed, trial);
      const { random, mix, what } = trialRun;
      harness = trialRun.harness;
      const h = harness;
      const idBroken = new Set<string>();
      const config = TRIAL_CONFIG;
      // A join in the service's query repeating one row of its page.
      if (random() < 0.3) h.sim.admin.listTwice('deals', h.sim.admin.truth().records.deals[Math.floor(random() * 300)]!.id);
      const sync = async (step: string, mode?: 'full') => {
        const report = await h.sync({ config, ...(mode ? { mode } : {}) });
        expect(report.ok, `${what}, ${step}:\n${failures(report)}`).toBe(true);
        figures.syncs += 1;
        for (const r of report.results) {
          if (r.passes === 0) continue;
          figures.walks += 1;
          figures.passes += r.passes;
          if (!r.settled) figures.unsettledWalks += 1;
        }
        return report;
      };

      // Deletions go to the trial's bin, from which some records come back (`mix.restores`).
      const deleted: Deleted[] = [];
      const walking = { changes: mix.changes, idBroken, definitions: mix.definitions, restores: mix.restores, deleted };
      changeWhileWalking(h, random, 30, walking);
      await sync('first sync, changes while it walks');
      for (const change of h.sim.admin.mutateRandom(40, seed + 100 + trial, [...mix.changes])) {
        if (change.kind === 'delete') deleted.push({ resource: change.resource, id: change.id });
      }
      changeWhileWalking(h, random, 30, walking);
      await sync('incremental sync, changes while it walks');
      changeWhileWalking(h, random, 20, walking);
      await sync('full sync, changes while it walks', 'full');
      figures.restored += await restoreAfterReconcile(h, mix.restores, deleted, { what, config });

      changeDefinitionBetweenSyncs(h, mix.definitions);
      await goQuiet(h);
      const quiet = await sync('quiet sync');
      await expectQuietTruth(h, quiet, { what, config, changes: mix.changes, idBroken });
      figures.exact += 1;
      await h.close();
      harness = undefined;
    }
    chaosReport('an unkind service at random: syncs while records change, then quiet', { trials: numbers.length, seed, ...figures });
    expect(figures.exact).toBe(numbers.length);
  });
});
