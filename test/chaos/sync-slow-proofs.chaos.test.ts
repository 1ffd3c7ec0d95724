/**
 * Slow proofs of the sync that the faster suite proves in parts: convergence through every kind of fault the
 * client retries (faults.chaos.test.ts does it at random), and a wide organization at the default settings
 * (memory-limit.test.ts sizes the limit; `npm run bench:wide` measures it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const SMALL = { deals: 450, companies: 150, contacts: 520, meetingLogs: 90, contactActivities: 260, users: 15 };

describe('sync, the slow proofs', () => {
  it('converges to the truth through 5xx, timeouts, resets, malformed bodies, HTML pages and 429s', async () => {
    harness = await startHarness(
      {
        seed: 8,
        size: SMALL,
        faults: {
          errorRate: 0.05,
          timeoutRate: 0.02,
          resetRate: 0.03,
          malformedRate: 0.05,
          htmlErrorRate: 0.03,
          rateLimitRate: 0.05,
          seed: 99,
        },
      },
      { requestTimeoutMs: 500, retryBaseDelayMs: 10 },
    );
    let report = await harness.sync();
    for (let attempt = 0; attempt < 4 && !report.ok; attempt++) report = await harness.sync();
    expect(report.ok).toBe(true);
    const faults = harness.sim.admin.stats().faults;
    expect(Object.values(faults).reduce((a, b) => a + b, 0)).toBeGreaterThan(5);
    harness.sim.admin.clearFaults();
    await expectMirrorsTruth(harness.env().warehouse, harness.sim);
  });

  it('mirrors an organization with 300 custom deal properties at the default settings (a fixed 256MB could not commit its batches)', async () => {
    harness = await startHarness({ seed: 8, size: { ...SMALL, deals: 2000 } });
    const admin = harness.sim.admin;
    const wide = Array.from(
      { length: 300 },
      (_, i) => admin.addProperty('deals', { display_name: `項目 ${i}`, property_type: i % 3 === 0 ? 'number' : 'text' }).api_name,
    );
    for (const [n, deal] of admin.truth().records.deals.entries()) {
      admin.updateRecord('deals', deal.id, Object.fromEntries(wide.map((name, i) => [name, i % 3 === 0 ? n + i : `値 ${n} ${i}`])));
    }
    const report = await harness.sync();
    expect(report.results.map((r) => r.error?.code ?? 'ok')).toEqual(report.results.map(() => 'ok'));
    await expectMirrorsTruth(harness.env().warehouse, harness.sim);
  });
});
