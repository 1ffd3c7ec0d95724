import type { RateLane } from '../core/rate-limiter.js';
import { gcraParams, type GcraParams } from './gcra.js';

/** The lanes that are capped; `sync` never is. */
export type CappedLane = Exclude<RateLane, 'sync'>;

/** Fraction (0–1] of the organization's rate each capped lane may spend at most. */
export type LaneShares = Record<CappedLane, number>;

/**
 * A backfill may take half the organization's budget and a summaries sweep a quarter, so the scheduled syncs
 * always keep the rest however long those run.
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
   * Share of the organization's rate each non-sync lane may use at most (its own bucket, on top of the key
   * and organization buckets). Partial: unnamed lanes keep their default.
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
 * The lane's own bucket, or null for `sync` (limited only by its keys and the organization). A share is of what
 * the keys in use can actually spend, min(organization, keys × per key): with one key at 1000/min a backfill
 * gets 500/min, not half of the organization's 5000 (which one key could never reach, leaving the schedule
 * nothing reserved).
 */
export function laneParams(budget: ResolvedBudget, lane: RateLane, keyCount = 1): GcraParams | null {
  if (lane === 'sync') return null;
  const capacity = Math.min(budget.perOrgPerMinute, Math.max(1, keyCount) * budget.perKeyPerMinute);
  // At least one request a minute, so a tiny share of a tiny limit still moves.
  const perMinute = Math.max(1, Math.floor(capacity * budget.laneShares[lane]));
  return gcraParams(perMinute, budget.burst);
}
