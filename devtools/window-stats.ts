/**
 * How a stream of request times fits a per-minute limit, measured the way the service counts: a sliding
 * 60-second window in which no span may hold more than the limit. Pure; used by the limiter benchmark, the Redis
 * limiter's tests and the cross-process acceptance test.
 */
export const WINDOW_MS = 60_000;

/** The most times inside any window of `windowMs`, however aligned (two times `windowMs` apart never share one). */
export function maxInWindow(times: readonly number[], windowMs = WINDOW_MS): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= windowMs) start++;
    max = Math.max(max, end - start + 1);
  }
  return max;
}

/** The longest quiet spell between consecutive times in [from, to]: how a pause shows in the traffic. */
export function longestGap(times: readonly number[], from = -Infinity, to = Infinity): { gapMs: number; after: number } {
  const sorted = times.filter((t) => t >= from && t <= to).sort((a, b) => a - b);
  let best = { gapMs: 0, after: sorted[0] ?? from };
  for (let i = 1; i < sorted.length; i++) {
    const gap = sorted[i]! - sorted[i - 1]!;
    if (gap > best.gapMs) best = { gapMs: gap, after: sorted[i - 1]! };
  }
  return best;
}

export interface WindowSummary {
  requests: number;
  /** Requests per minute over the steady part (after `warmupMs`, so the opening burst does not flatter it). */
  steadyPerMinute: number;
  /** steadyPerMinute ÷ limit. */
  utilisation: number;
  /** Most requests in any 60-second window. */
  maxInWindow: number;
  /** maxInWindow ÷ limit: above 1 means the service would have answered 429. */
  maxWindowRatio: number;
}

/**
 * `times` measured from `startedAt` to `endedAt` against `limitPerMinute`; the first `warmupMs` are left out of
 * the steady rate.
 */
export function summarizeWindow(
  times: readonly number[],
  limitPerMinute: number,
  span: { startedAt: number; endedAt: number; warmupMs?: number },
): WindowSummary {
  const steadyFrom = span.startedAt + (span.warmupMs ?? 5_000);
  const steadyMs = Math.max(1, span.endedAt - steadyFrom);
  const steady = times.filter((t) => t >= steadyFrom && t <= span.endedAt).length;
  const steadyPerMinute = (steady / steadyMs) * WINDOW_MS;
  const max = maxInWindow(times);
  return {
    requests: times.length,
    steadyPerMinute,
    utilisation: steadyPerMinute / limitPerMinute,
    maxInWindow: max,
    maxWindowRatio: max / limitPerMinute,
  };
}
