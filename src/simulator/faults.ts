import type { Prng } from './prng.js';
import { createPrng } from './prng.js';
import type { FaultKind, FaultSettings } from './types.js';
import { FAULT_KINDS } from './types.js';

/** Decides, per public request, whether and how it is faulted: scripted faults first, then seeded random draws. */

interface Scripted {
  remaining: number;
  kind: FaultKind;
  pathPrefix: string;
}

const RATE_KINDS: Array<[keyof FaultSettings, FaultKind]> = [
  ['errorRate', 'error'],
  ['timeoutRate', 'timeout'],
  ['resetRate', 'reset'],
  ['malformedRate', 'malformed'],
  ['htmlErrorRate', 'html'],
  ['rateLimitRate', 'rateLimit'],
];

export interface FaultDecision {
  kind: FaultKind | null;
  delayMs: number;
}

/** The rate-limit headers a spurious 429 carries (see FaultSettings). */
export interface SpuriousRateLimit {
  retryAfterSeconds: number;
  remaining: number;
  resetSeconds: number;
}

const RATE_LIMIT_COUNTS: Array<keyof FaultSettings> = ['rateLimitRetryAfterSeconds', 'rateLimitRemaining', 'rateLimitResetSeconds'];

export class FaultInjector {
  private settings: FaultSettings = {};
  private prng: Prng;
  private readonly scripted: Scripted[] = [];

  constructor(private readonly defaultSeed: number) {
    this.prng = createPrng(defaultSeed);
  }

  set(settings: FaultSettings): void {
    for (const [name] of RATE_KINDS) {
      const rate = settings[name];
      if (rate !== undefined && (typeof rate !== 'number' || rate < 0 || rate > 1)) {
        throw new Error(`${name} must be a probability between 0 and 1`);
      }
    }
    for (const name of RATE_LIMIT_COUNTS) {
      const count = settings[name];
      if (count !== undefined && (typeof count !== 'number' || !Number.isInteger(count) || count < 0)) {
        throw new Error(`${name} must be a whole number of at least 0`);
      }
    }
    this.settings = { ...settings };
    this.prng = createPrng(settings.seed ?? this.defaultSeed);
  }

  clear(): void {
    this.settings = {};
    this.scripted.length = 0;
  }

  failNext(n: number, kind: FaultKind, pathPrefix = ''): void {
    if (!FAULT_KINDS.includes(kind)) throw new Error(`unknown fault kind ${String(kind)}`);
    if (!Number.isInteger(n) || n < 1) throw new Error('failNext needs a positive count');
    this.scripted.push({ remaining: n, kind, pathPrefix });
  }

  decide(path: string): FaultDecision {
    const base = this.settings.latencyMs ?? 0;
    const jitter = this.settings.latencyJitterMs ?? 0;
    const delayMs = base + (jitter > 0 ? this.prng.next() * jitter : 0);
    // repeatPage is not a fault instead of the handler: the list handler consumes it (takeRepeatPage).
    const script = this.scripted.find((s) => s.kind !== 'repeatPage' && path.startsWith(s.pathPrefix));
    if (script) {
      this.consume(script);
      return { kind: script.kind, delayMs };
    }
    const anyRate = RATE_KINDS.some(([name]) => (this.settings[name] ?? 0) > 0);
    if (!anyRate) return { kind: null, delayMs };
    let roll = this.prng.next();
    for (const [name, kind] of RATE_KINDS) {
      const rate = (this.settings[name] as number | undefined) ?? 0;
      if (roll < rate) return { kind, delayMs };
      roll -= rate;
    }
    return { kind: null, delayMs };
  }

  /** Consumes one armed repeatPage fault whose prefix matches; false when none is armed. */
  takeRepeatPage(path: string): boolean {
    const script = this.scripted.find((s) => s.kind === 'repeatPage' && path.startsWith(s.pathPrefix));
    if (!script) return false;
    this.consume(script);
    return true;
  }

  private consume(script: Scripted): void {
    script.remaining -= 1;
    if (script.remaining === 0) this.scripted.splice(this.scripted.indexOf(script), 1);
  }

  /** What a spurious 429 says about the key's window. */
  spuriousRateLimit(): SpuriousRateLimit {
    const retryAfterSeconds = this.settings.rateLimitRetryAfterSeconds ?? 1;
    return {
      retryAfterSeconds,
      remaining: this.settings.rateLimitRemaining ?? 0,
      resetSeconds: this.settings.rateLimitResetSeconds ?? retryAfterSeconds,
    };
  }

  /** Status of an `error` fault: 500, 502 or 503. */
  errorStatus(kind: FaultKind): number {
    if (kind === 'error500') return 500;
    if (kind === 'error502') return 502;
    if (kind === 'error503') return 503;
    return [500, 502, 503][this.prng.int(3)] as number;
  }
}
