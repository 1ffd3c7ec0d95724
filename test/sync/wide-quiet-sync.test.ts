/**
 * A checkpoint rewrites each changed column of a table at once: it needs what a commit into the widest table needs,
 * whatever limit the last (narrow) batch left.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('an organization 600 properties wide', () => {
  it('syncs again and again, each publish checkpointing the wide table at the limit its width needs', async () => {
    harness = await startHarness({
      seed: 31,
      size: { deals: 10, companies: 5, contacts: 5, meetingLogs: 2, contactActivities: 2, users: 2 },
    });
    for (let i = 0; i < 600; i++) {
      harness.sim.admin.addProperty('deals', { display_name: `Wide ${i}`, property_type: ['text', 'number', 'date'][i % 3]! });
    }
    // Before, the second sync's publish failed (the database invalidated at the limit a narrow batch left), and the
    // WAL it left could not be replayed by the next open: every sync after it failed.
    for (const step of ['first', 'second', 'third']) {
      const report = await harness.sync();
      expect(report.snapshotError?.message, `${step} sync`).toBeUndefined();
      expect(report.ok, `${step} sync`).toBe(true);
    }
    await expectMirrorsTruth(harness.env().warehouse, harness.sim);
  });
});
