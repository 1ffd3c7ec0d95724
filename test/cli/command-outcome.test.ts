import { describe, expect, it } from 'vitest';
import { commandFailure } from '../../src/cli/outcome.js';
import { emptyResult } from '../../src/sync/index.js';

describe('commandFailure', () => {
  it('a resource skipped because another process walked it fails a command whose work no other walk does, and only such a command', () => {
    const results = [emptyResult('deals', 'reconcile', 'skipped'), emptyResult('contacts', 'reconcile', 'succeeded')];
    expect(commandFailure(results)).toBeNull();
    expect(commandFailure(results, { skipped: 'reconciled' })).toMatchObject({
      code: 'walk_in_progress',
      disposition: 'retriable',
      message: expect.stringMatching(/^another process walked deals past SALESYNC_LEASE_WAIT, so deals was not reconciled: rerun/),
    });
    expect(commandFailure([emptyResult('deals', 'reconcile', 'succeeded')], { skipped: 'reconciled' })).toBeNull();
  });
});
