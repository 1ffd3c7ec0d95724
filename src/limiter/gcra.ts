/**
 * Generic cell rate algorithm, as pure functions: each bucket is one number, the theoretical arrival time (TAT)
 * of the next request. Smooth by construction, so a server counting in sliding or fixed windows never sees a
 * burst at a window's edge. The in-process limiter calls these directly; `lua/acquire.lua` is the same
 * arithmetic run atomically inside Redis.
 */
export interface GcraState {
  /** Milliseconds since epoch at which the bucket is next empty of debt. */
  tat: number;
}

export interface GcraParams {
  /** Milliseconds between requests at the sustained rate. */
  intervalMs: number;
  /** How far ahead of now the TAT may run: (burst - 1) intervals. */
  toleranceMs: number;
}

/**
 * Burst `burst` (at most half the limit) with the refill lowered to `perMinute - burst` per minute, so that a
 * full burst plus one minute of refill never exceeds `perMinute`: no 60-second window, however aligned, holds
 * more than the limit.
 */
export function gcraParams(perMinute: number, burst: number): GcraParams {
  const b = Math.max(1, Math.min(burst, Math.floor(perMinute / 2)));
  const sustained = Math.max(1, perMinute - b);
  const intervalMs = 60_000 / sustained;
  return { intervalMs, toleranceMs: (b - 1) * intervalMs };
}

/** How long until a request may go out on this bucket (0: now). Pure. */
export function gcraWait(state: GcraState, params: GcraParams, now: number): number {
  const tat = Math.max(state.tat, now);
  const wait = tat - params.toleranceMs - now;
  // Intervals are fractional milliseconds: ignore float dust so a full burst really goes out at once.
  return wait > 1e-6 ? wait : 0;
}

/**
 * The same bucket as a request that yields sees it: the same rate, but only the first half of the burst (a burst
 * of 10 leaves 5 to the yielding request). A request standing level (the schedule, or a lane within its share)
 * therefore always finds the other half free and goes first, while a yielding request alone still keeps the
 * bucket at its full rate (what it may not use is burst, never rate). With a burst of 1 there is nothing to keep
 * back and both stand alike. Pure.
 */
export function gcraYielding(params: GcraParams): GcraParams {
  const burst = Math.round(params.toleranceMs / params.intervalMs) + 1;
  const kept = Math.floor(burst / 2);
  return { intervalMs: params.intervalMs, toleranceMs: Math.max(0, params.toleranceMs - kept * params.intervalMs) };
}

/** The bucket after one request is sent at `now` (call only when gcraWait is 0). Pure. */
export function gcraTake(state: GcraState, params: GcraParams, now: number): GcraState {
  return { tat: Math.max(state.tat, now) + params.intervalMs };
}

/**
 * The bucket after the server said only `remaining` requests are left: at most that many may now go out back to
 * back (other integrations of the organization spend the same budget). Never loosens the bucket. Pure.
 */
export function gcraLimitAvailable(state: GcraState, params: GcraParams, now: number, remaining: number): GcraState {
  const r = Math.max(0, Math.floor(remaining));
  return { tat: Math.max(state.tat, now + params.toleranceMs - (r - 1) * params.intervalMs) };
}
