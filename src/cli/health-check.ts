import { ConfigError, SalesyncError, shown } from '../core/errors.js';
import { isResourceName, RESOURCE_NAMES } from '../core/resources.js';
import { parseDurationMs } from '../core/time.js';
import { FAILED_OUTCOMES, type ResourceStatus } from '../status/index.js';
import { formatDuration } from './format.js';

/**
 * `status --check`: what an operator on call must hear about, decided from the status alone (pure). A resource
 * is a problem when its last completed walk is older than its max age (or it never completed one), when the last
 * run of any of its modes failed, or when records of it sit in quarantine.
 */

/** Exit code of `status --check` that found a problem (3 is a run with records in quarantine). */
export const EXIT_UNHEALTHY = 4;

/** The stable code of that failure. */
export const CHECK_FAILED = 'check_failed';

export type ProblemKind = 'stale' | 'never_completed' | 'failed' | 'quarantine' | 'redis_unavailable';

export interface Problem {
  resource: string;
  kind: ProblemKind;
  /** One line that says what is wrong and what to do. */
  message: string;
}

/** How old each resource may be: one default, overridden per resource; null means "not checked". */
export interface MaxAges {
  default: number | null;
  perResource: Record<string, number | null>;
}

/**
 * One `--max-age` value: `1h` (every resource), `deals=2h` (one resource), or `off` / `deals=off` (not checked).
 * Throws `invalid_option` naming what is accepted.
 */
export function parseMaxAge(value: string, previous: MaxAges): MaxAges {
  const [left, right] = value.includes('=') ? (value.split('=', 2) as [string, string]) : [null, value];
  const resource = left?.trim() ?? null;
  if (resource !== null && !isResourceName(resource)) {
    throw new ConfigError(
      'invalid_option',
      `--max-age ${value}: unknown resource "${resource}"; choose from ${RESOURCE_NAMES.join(', ')}`,
      { option: '--max-age' },
    );
  }
  const text = right.trim();
  const off = /^(off|none)$/i.test(text);
  const ms = off ? null : parseDurationMs(text);
  if (!off && (ms === null || ms < 1)) {
    throw new ConfigError(
      'invalid_option',
      `--max-age must be a duration such as 90m or 1h, resource=duration such as deals=2h, or off (got ${shown(value)})`,
      {
        option: '--max-age',
      },
    );
  }
  return resource === null ? { ...previous, default: ms } : { ...previous, perResource: { ...previous.perResource, [resource]: ms } };
}

export function maxAgeOf(maxAges: MaxAges, resource: string): number | null {
  return resource in maxAges.perResource ? maxAges.perResource[resource]! : maxAges.default;
}

/** Every problem of every resource, in resource order. */
export function findProblems(statuses: readonly ResourceStatus[], maxAges: MaxAges): Problem[] {
  const problems: Problem[] = [];
  for (const s of statuses) {
    const maxAge = maxAgeOf(maxAges, s.resource);
    if (maxAge !== null) {
      if (s.freshnessMs === null) {
        problems.push({
          resource: s.resource,
          kind: 'never_completed',
          message: `no walk of ${s.resource} has completed yet: run \`salesync sync ${s.resource}\` (or --max-age ${s.resource}=off if you do not sync it)`,
        });
      } else if (s.freshnessMs > maxAge) {
        problems.push({
          resource: s.resource,
          kind: 'stale',
          message: `last completed walk ${formatDuration(s.freshnessMs)} ago, more than the ${formatDuration(maxAge)} allowed (--max-age): check the schedule or cron, and the last run`,
        });
      }
    }
    for (const [mode, run] of Object.entries(s.lastRuns)) {
      if (!FAILED_OUTCOMES.includes(run.outcome)) continue;
      const why =
        run.outcome === 'abandoned'
          ? 'its process ended without finishing it (killed or crashed)'
          : `it failed with ${run.error ?? 'an error'}`;
      problems.push({
        resource: s.resource,
        kind: 'failed',
        message: `the last ${mode} run (started ${run.startedAt.replace('T', ' ').slice(0, 19)}Z) did not complete: ${why}; see sync_runs, fix the cause and run it again`,
      });
    }
    if (s.rejected > 0) {
      problems.push({
        resource: s.resource,
        kind: 'quarantine',
        message:
          `${s.rejected} record${s.rejected === 1 ? '' : 's'} in quarantine, missing from the mirror ` +
          `(salesync query "SELECT * FROM rejected_records WHERE resource = '${s.resource}'")`,
      });
    }
  }
  return problems;
}

/** The line a problem prints as: `<resource>: <kind>: <message>`. */
export function problemLine(problem: Problem): string {
  return `${problem.resource}: ${problem.kind}: ${problem.message}`;
}

/** The failure `status --check` ends with (exit EXIT_UNHEALTHY); its context carries the problems for the alert. */
export function checkFailure(problems: readonly Problem[]): SalesyncError {
  const kinds = [...new Set(problems.map((p) => `${p.resource} ${p.kind}`))];
  return new SalesyncError(
    CHECK_FAILED,
    `${problems.length} problem${problems.length === 1 ? '' : 's'} found (${kinds.join(', ')}): one line each above`,
    { context: { problems } },
  );
}
