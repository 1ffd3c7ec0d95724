import { describe, expect, it } from 'vitest';
import { findProblems, parseMaxAge, problemLine, type MaxAges } from '../../src/cli/health-check.js';
import { ageOf, type ResourceStatus, type RunSummary } from '../../src/status/index.js';

const NOW = Date.parse('2026-11-25T12:00:00Z');
const HOUR = 3_600_000;

function run(overrides: Partial<RunSummary> = {}): RunSummary {
  return {
    startedAt: '2026-11-25T11:50:00.000Z',
    finishedAt: '2026-11-25T11:51:00.000Z',
    mode: 'incremental',
    outcome: 'succeeded',
    records: 10,
    requests: 2,
    rateLimited: 0,
    changed: 0,
    deleted: 0,
    durationMs: 60_000,
    error: null,
    ...overrides,
  };
}

function status(resource: string, overrides: Partial<ResourceStatus> = {}): ResourceStatus {
  const last = run();
  return {
    resource,
    rows: 10,
    watermark: null,
    lastCompletedAt: '2026-11-25T11:51:00Z',
    freshnessMs: 9 * 60_000,
    walkInProgress: false,
    backfillInProgress: false,
    rejected: 0,
    lastRun: last,
    lastRuns: { incremental: last },
    ...overrides,
  };
}

const oneHour: MaxAges = { default: HOUR, perResource: {} };

describe('status --check decisions', () => {
  it('a fresh resource with a successful last run and an empty quarantine is no problem', () => {
    expect(findProblems([status('deals'), status('users')], oneHour)).toEqual([]);
  });

  it('a resource older than its max age is stale; one never completed says how to fix it', () => {
    const problems = findProblems(
      [status('deals', { freshnessMs: 2 * HOUR }), status('users', { freshnessMs: null, lastCompletedAt: null })],
      oneHour,
    );
    expect(problems.map((p) => [p.resource, p.kind])).toEqual([
      ['deals', 'stale'],
      ['users', 'never_completed'],
    ]);
    expect(problemLine(problems[0]!)).toBe(
      'deals: stale: last completed walk 2h00m ago, more than the 1h00m allowed (--max-age): check the schedule or cron, and the last run',
    );
    expect(problems[1]!.message).toMatch(/salesync sync users/);
  });

  it('per-resource max ages override the default, and off skips the age check', () => {
    let ages = parseMaxAge('1h', { default: 25 * HOUR, perResource: {} });
    ages = parseMaxAge('deals=3h', ages);
    ages = parseMaxAge('users=off', ages);
    expect(ages).toEqual({ default: HOUR, perResource: { deals: 3 * HOUR, users: null } });
    const problems = findProblems(
      [
        status('deals', { freshnessMs: 2 * HOUR }),
        status('contacts', { freshnessMs: 2 * HOUR }),
        status('users', { freshnessMs: null, lastCompletedAt: null }),
      ],
      ages,
    );
    expect(problems.map((p) => `${p.resource} ${p.kind}`)).toEqual(['contacts stale']);
  });

  it('rejects a max age that is not a duration or names no resource', () => {
    expect(() => parseMaxAge('soon', oneHour)).toThrow(/--max-age must be a duration/);
    expect(() => parseMaxAge('dealz=1h', oneHour)).toThrow(/unknown resource "dealz"/);
  });

  it('the last run of any mode that failed or was abandoned is a problem; interrupted or skipped runs are not', () => {
    const failed = run({ mode: 'reconcile', outcome: 'failed', error: 'unauthorized' });
    const abandoned = run({ mode: 'backfill', outcome: 'abandoned', error: 'run_abandoned' });
    const problems = findProblems(
      [
        status('deals', { lastRuns: { incremental: run(), reconcile: failed } }),
        status('contacts', { lastRuns: { incremental: run({ outcome: 'interrupted' }), backfill: abandoned } }),
        status('companies', { lastRuns: { incremental: run({ outcome: 'skipped' }) } }),
      ],
      oneHour,
    );
    expect(problems.map((p) => `${p.resource} ${p.kind}`)).toEqual(['deals failed', 'contacts failed']);
    expect(problems[0]!.message).toMatch(/the last reconcile run .* it failed with unauthorized/);
    expect(problems[1]!.message).toMatch(/its process ended without finishing it/);
  });

  it('records in quarantine are a problem, with the query that shows them', () => {
    const [problem] = findProblems([status('deals', { rejected: 3 })], oneHour);
    expect(problem).toMatchObject({ resource: 'deals', kind: 'quarantine' });
    expect(problem!.message).toMatch(/^3 records in quarantine.*SELECT \* FROM rejected_records WHERE resource = 'deals'/);
  });
});

describe('freshness', () => {
  it('is never negative: a completion stamped by a service clock ahead of ours counts as now, and says by how much', () => {
    expect(ageOf('2026-11-25T12:00:01.464Z', NOW)).toEqual({ freshnessMs: 0, clockAheadMs: 1464 });
    expect(ageOf('2026-11-25T11:59:00Z', NOW)).toEqual({ freshnessMs: 60_000 });
    expect(ageOf(null, NOW)).toEqual({ freshnessMs: null });
  });
});
