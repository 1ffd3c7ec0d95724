import { invalidRequest } from './errors.js';
import type { ReplicaServing } from './commit-lag.js';
import type { ClockSettings, CommitLagScope, DefinitionsShape, ListPageHook, SimulatorOptions, SummaryStatuses } from './types.js';

/**
 * The unkind knobs that can change while the simulator runs (the onListPage hook, the service's clock shown by
 * `Date` and `X-RateLimit-Reset`), shared by the HTTP layer, the handlers and the admin, and the validation of every
 * knob's value.
 */

export interface RuntimeKnobs {
  onListPage: ListPageHook | null;
  clock: Required<ClockSettings>;
  /** Raised by `expireCursors`: every cursor given before is refused. */
  cursorEpoch: number;
  /** How `expireCursors` last said a cursor is refused. */
  refusedCursor: 'invalid_request' | 'not_found';
  /** Records record lists show twice in a row (`listTwice`), as `resource/id`. */
  listedTwice: Set<string>;
}

export function checkHook(hook: unknown): ListPageHook | null {
  if (hook !== null && typeof hook !== 'function') throw invalidRequest('onListPage は関数または null です。');
  return hook as ListPageHook | null;
}

/** `current` with the members `settings` gives. */
export function mergeClock(current: Required<ClockSettings>, settings: ClockSettings): Required<ClockSettings> {
  const { dateSkewMs = current.dateSkewMs, omitDate = current.omitDate } = settings ?? {};
  if (typeof dateSkewMs !== 'number' || !Number.isFinite(dateSkewMs)) throw invalidRequest('dateSkewMs は数値です。');
  if (typeof omitDate !== 'boolean') throw invalidRequest('omitDate は真偽値です。');
  return { dateSkewMs, omitDate };
}

export function checkCommitLag(ms: unknown): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw invalidRequest('commitLagMs は 0 以上の数値です。');
  return ms;
}

export function checkCommitLagScope(scope: unknown): CommitLagScope {
  if (scope !== 'all' && scope !== 'single') throw invalidRequest('commitLagScope は all または single です。');
  return scope;
}

/** Replicas serving reads (`SimulatorOptions.readReplicas`): a count of at least 1, and which serves (a replica's index). */
export function checkReadReplicas(count: unknown, serving: unknown = 'random'): { count: number; serving: ReplicaServing } {
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1) throw invalidRequest('readReplicas は 1 以上の整数です。');
  const valid = serving === 'random' || (typeof serving === 'number' && Number.isInteger(serving) && serving >= 0 && serving < count);
  if (!valid) throw invalidRequest('serving は random またはレプリカの番号 (0 から readReplicas - 1) です。');
  return { count, serving: serving as ReplicaServing };
}

export function checkSummaryStatuses(statuses: SummaryStatuses): SummaryStatuses {
  const { pending, final } = (statuses ?? {}) as Partial<SummaryStatuses>;
  if (typeof pending !== 'string' || pending === '') throw invalidRequest('pending (文字列) は必須です。');
  if (!Array.isArray(final) || final.length === 0 || !final.every((f) => typeof f === 'string' && f !== '')) {
    throw invalidRequest('final は1つ以上の文字列の配列です。');
  }
  if (final.includes(pending)) throw invalidRequest('pending と final に同じ名前は使えません。');
  return { pending, final: [...final] };
}

/** `SimulatorOptions.definitionsListing` with its defaults; a bare list has no room for `paging`, so it is never paged. */
export function checkDefinitionsListing(listing: NonNullable<SimulatorOptions['definitionsListing']>): {
  pageSize: number | null;
  shape: DefinitionsShape;
} {
  const { pageSize = null, shape = 'results' } = listing;
  if (shape !== 'results' && shape !== 'data' && shape !== 'array') throw new Error(`unknown definitionsListing.shape ${String(shape)}`);
  if (pageSize !== null && (!Number.isInteger(pageSize) || pageSize < 1)) {
    throw new Error(`definitionsListing.pageSize must be a positive integer, not ${String(pageSize)}`);
  }
  if (pageSize !== null && shape === 'array') throw new Error('definitionsListing: a bare list (shape array) cannot be paged');
  return { pageSize, shape };
}
