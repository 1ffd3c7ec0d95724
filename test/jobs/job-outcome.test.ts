import { describe, expect, it } from 'vitest';
import { busyDelayMs, verdictFor } from '../../jobs/job-outcome.js';
import { SalesyncError } from '../../src/core/errors.js';

const NOW = 1_800_000_000_000;

describe('verdictFor', () => {
  it('completes a skipped job no other walk stands in for only when asked not to wait: else it looks again later', () => {
    const skipped = [{ outcome: 'skipped' as const }];
    expect(verdictFor(skipped, NOW)).toEqual({ action: 'complete' });
    expect(verdictFor(skipped, NOW, 60_000)).toMatchObject({ action: 'delay', at: NOW + 60_000 });
    expect(verdictFor([{ outcome: 'succeeded' as const }], NOW, 60_000)).toEqual({ action: 'complete' });
  });

  it('fails a fatal error for good and retries a retriable one before anything else', () => {
    const fatal = new SalesyncError('unauthorized', 'bad key', { disposition: 'fatal' });
    const retriable = new SalesyncError('internal_error', 'down', { disposition: 'retriable' });
    expect(verdictFor([{ outcome: 'skipped' }, { outcome: 'failed', error: fatal }], NOW, 60_000)).toEqual({
      action: 'fail',
      error: fatal,
    });
    expect(verdictFor([{ outcome: 'failed', error: retriable }], NOW, 60_000)).toEqual({ action: 'retry', error: retriable });
  });
});

describe('busyDelayMs', () => {
  it('waits as long as the job has waited, between the lease-derived minimum and 15 minutes', () => {
    expect(busyDelayMs(0, 60_000)).toBe(60_000);
    expect(busyDelayMs(5 * 60_000, 60_000)).toBe(5 * 60_000);
    expect(busyDelayMs(6 * 3_600_000, 60_000)).toBe(15 * 60_000);
  });
});
