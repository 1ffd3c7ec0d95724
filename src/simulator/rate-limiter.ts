/**
 * Per-key and per-organization limits over a sliding 60-second window: no 60 s span may hold more counted
 * requests than the limit. A log of request times per key (and one for the org) is exact at these rates.
 */

export const WINDOW_MS = 60_000;

class WindowLog {
  private times: number[] = [];
  private head = 0;

  prune(now: number): void {
    while (this.head < this.times.length && (this.times[this.head] as number) <= now - WINDOW_MS) this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
  }

  get count(): number {
    return this.times.length - this.head;
  }

  oldest(): number | undefined {
    return this.times[this.head];
  }

  /** Time of the request whose leaving would bring the count below `limit`. */
  blockingAt(limit: number): number | undefined {
    return this.times[this.head + this.count - limit];
  }

  push(now: number): void {
    this.times.push(now);
  }
}

export interface RateDecision {
  allowed: boolean;
  headers: Record<string, string>;
  /** Seconds, only when refused. */
  retryAfter?: number;
}

export class SlidingWindowLimiter {
  private readonly perKey = new Map<string, WindowLog>();
  private readonly org = new WindowLog();

  constructor(
    readonly perKeyLimit: number,
    readonly perOrgLimit: number,
  ) {}

  /**
   * Counts the request when both windows have room; a refusal (429) consumes nothing. The windows count on `now`;
   * `clockSkewMs` moves only the reported reset onto the service's clock (the one its `Date` header shows).
   */
  take(key: string, now: number, clockSkewMs = 0): RateDecision {
    let log = this.perKey.get(key);
    if (!log) {
      log = new WindowLog();
      this.perKey.set(key, log);
    }
    log.prune(now);
    this.org.prune(now);
    const keyFull = log.count >= this.perKeyLimit;
    const orgFull = this.org.count >= this.perOrgLimit;
    if (keyFull || orgFull) {
      let freeAt = now;
      if (keyFull) freeAt = Math.max(freeAt, (log.blockingAt(this.perKeyLimit) ?? now) + WINDOW_MS);
      if (orgFull) freeAt = Math.max(freeAt, (this.org.blockingAt(this.perOrgLimit) ?? now) + WINDOW_MS);
      const retryAfter = Math.max(1, Math.ceil((freeAt - now) / 1000));
      return { allowed: false, retryAfter, headers: this.headers(log, now, clockSkewMs) };
    }
    log.push(now);
    this.org.push(now);
    return { allowed: true, headers: this.headers(log, now, clockSkewMs) };
  }

  private headers(log: WindowLog, now: number, clockSkewMs: number): Record<string, string> {
    const oldest = log.oldest() ?? now;
    return {
      'X-RateLimit-Limit': String(this.perKeyLimit),
      'X-RateLimit-Remaining': String(Math.max(0, this.perKeyLimit - log.count)),
      'X-RateLimit-Reset': String(Math.ceil((oldest + WINDOW_MS + clockSkewMs) / 1000)),
    };
  }

  /** Headers for a response that counts nothing (e.g. 401): a full window. */
  idleHeaders(now: number, clockSkewMs = 0): Record<string, string> {
    return {
      'X-RateLimit-Limit': String(this.perKeyLimit),
      'X-RateLimit-Remaining': String(this.perKeyLimit),
      'X-RateLimit-Reset': String(Math.ceil((now + WINDOW_MS + clockSkewMs) / 1000)),
    };
  }
}
