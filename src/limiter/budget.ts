import type { RateLane } from '../core/rate-limiter.js';
import { gcraParams, type GcraParams } from './gcra.js';

/**
 * The lanes with a share of their own, held to it while the schedule wants the rest; `sync` (the schedule) has
 * none and is never held back by a lane.
 */
export type CappedLane = Exclude<RateLane, 'sync'>;

/**
 * Fraction (0–1] of the organization's rate (of what the keys in use can spend) each non-sync lane is limited
 * to while the schedule wants the rest. Within its share a lane's requests stand level with the schedule's
 * (first come, first served); beyond it the lane only takes tokens nobody standing level is waiting for. So a
 * lane alone uses the whole budget; a schedule that starts asking is served at once and keeps at least 1 − the
 * shares of the lanes running beside it (shares adding up past 1 leave it nothing reserved); what the schedule
 * leaves unused a lane may take; and of two lanes, each keeps its share (within-share requests go before the
 * other lane's beyond-share ones).
 */
export type LaneShares = Record<CappedLane, number>;

/**
 * Beside a schedule that wants everything, a backfill is held to half the budget and a summaries sweep to a
 * quarter, so the schedule keeps the rest however long those run; alone, either uses the whole budget.
 */
export const DEFAULT_LANE_SHARES: LaneShares = { backfill: 0.5, summaries: 0.25 };

/** What both limiters are told: the service's limits and how to divide them. */
export interface LimiterBudgetOptions {
  /**
   * Requests per minute allowed per key.
   * @defaultValue 1000 (the service's per-key limit)
   */
  perKeyPerMinute?: number;
  /**
   * Requests per minute allowed for the whole organization, all keys together.
   * @defaultValue 5000 (the service's per-organization limit)
   */
  perOrgPerMinute?: number;
  /**
   * Tokens a bucket may hold: how many requests may go out back to back after an idle spell. The refill rate
   * is lowered so that burst + one minute of refill never exceeds the limit.
   * @defaultValue 10
   */
  burst?: number;
  /**
   * Share of the organization's rate each non-sync lane is limited to while the schedule is running, and within
   * which it stands level with the schedule (its own bucket; beyond it the lane yields, see LaneShares). Alone,
   * or beside a schedule that leaves tokens unused, a lane may use the whole budget. Partial: unnamed lanes keep
   * their default.
   * @defaultValue DEFAULT_LANE_SHARES (backfill 0.5, summaries 0.25)
   */
  laneShares?: Partial<LaneShares>;
}

export interface ResolvedBudget {
  perKeyPerMinute: number;
  perOrgPerMinute: number;
  burst: number;
  laneShares: LaneShares;
}

export function resolveBudget(options: LimiterBudgetOptions): ResolvedBudget {
  const laneShares = { ...DEFAULT_LANE_SHARES };
  for (const lane of Object.keys(DEFAULT_LANE_SHARES) as CappedLane[]) {
    const share = options.laneShares?.[lane];
    if (share === undefined) continue;
    if (!(share > 0 && share <= 1)) throw new RangeError(`the ${lane} lane's share must be in (0, 1], got ${share}`);
    laneShares[lane] = share;
  }
  return {
    perKeyPerMinute: options.perKeyPerMinute ?? 1000,
    perOrgPerMinute: options.perOrgPerMinute ?? 5000,
    burst: options.burst ?? 10,
    laneShares,
  };
}

/**
 * The lane's own bucket, its share, or null for `sync` (limited only by its keys and the organization). A
 * request that finds a token in it stands level with the schedule; one that does not yields (gcraYielding) and
 * leaves this bucket alone, so a lane running alone does not run up a debt here that would hold it back once
 * the schedule starts. A share is of what the keys in use can actually spend, min(organization, keys × per
 * key): with one key at 1000/min a backfill keeps 500/min, not half of the organization's 5000 (which one key
 * could never reach, leaving the schedule nothing reserved).
 */
export function laneParams(budget: ResolvedBudget, lane: RateLane, keyCount = 1): GcraParams | null {
  if (lane === 'sync') return null;
  const capacity = Math.min(budget.perOrgPerMinute, Math.max(1, keyCount) * budget.perKeyPerMinute);
  // At least one request a minute, so a tiny share of a tiny limit still moves.
  const perMinute = Math.max(1, Math.floor(capacity * budget.laneShares[lane]));
  return gcraParams(perMinute, budget.burst);
}

/**
 * A key's pace after an answer announced `limit` (X-RateLimit-Limit, the current window's per-key limit): that
 * figure while it is below ours, ours again once it is not, since a window's limit lowered for a while must not
 * slow the key for the life of the process. Undefined when the answer announced none: the pace stays.
 */
export function announcedKeyParams(budget: ResolvedBudget, limit: number | undefined): GcraParams | undefined {
  if (limit === undefined || !Number.isFinite(limit) || limit <= 0) return undefined;
  return gcraParams(Math.min(limit, budget.perKeyPerMinute), budget.burst);
}

/** The queue a waiter stands in: its lane's, or its lane's yielding requests' (see AcquireOptions.yielding). */
export function queueOf(waiter: { lane: RateLane; yielding: boolean }): string {
  return waiter.yielding ? `${waiter.lane}:yielding` : waiter.lane;
}
