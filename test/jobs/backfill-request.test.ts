import { describe, expect, it } from 'vitest';
import { backfillRequest } from '../../jobs/backfill-job.js';

describe('backfillRequest', () => {
  it('refuses what a backfill cannot do, before anything is queued or run: users, a bad instant, a window that is empty', () => {
    expect(() => backfillRequest('users', undefined, undefined)).toThrow(expect.objectContaining({ code: 'invalid_backfill' }));
    expect(() => backfillRequest('deals', 'yesterday', undefined)).toThrow(/--since must be an ISO 8601 instant/);
    expect(() => backfillRequest('deals', '2026-02-01T00:00:00Z', '2026-01-01T00:00:00Z')).toThrow(
      /--until .* is before --since .*; swap them/,
    );
    expect(backfillRequest('deals', '2026-01-01T00:00:00Z', '2026-02-01T09:00:00+09:00')).toEqual({
      resource: 'deals',
      since: '2026-01-01T00:00:00Z',
      until: '2026-02-01T09:00:00+09:00',
    });
  });
});
