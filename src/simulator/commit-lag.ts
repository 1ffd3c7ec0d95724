import type { Prng } from './prng.js';
import type { StoredRecord } from './record-store.js';
import type { RecordResource } from './types.js';
import { RECORD_RESOURCES } from './types.js';

/**
 * Commit lag: a change keeps the updated_at of the moment it was made, but readers (list, search, single GET)
 * see it only once the clock reaches updated_at + lag; until then they see the version before it (none for a
 * create). The stores always hold the latest versions (ground truth); this keeps what readers still see.
 *
 * Readers may be several replicas, the i-th of n behind by i/(n−1) of a change's lag (the first up to date, the
 * last the whole lag), each read request served by one (`serveRead`): reads are then not monotonic.
 */

interface Pending {
  /** What readers saw before the oldest pending change; null when the record did not exist yet. */
  base: StoredRecord | null;
  /** Pending changes, oldest first. The last one's version is the live record (later silent changes show with it). */
  commits: Array<{ stamp: number; visibleAt: number; version: StoredRecord }>;
}

/** Which replica serves each read request: one drawn at random, or always the one given (0 is up to date). */
export type ReplicaServing = 'random' | number;

export function snapshot(record: StoredRecord): StoredRecord {
  return { ...record, values: { ...record.values } };
}

export class CommitLag {
  private lagMs = 0;
  private readonly pending = {} as Record<RecordResource, Map<string, Pending>>;
  private replicaCount = 1;
  private serving: ReplicaServing = 'random';
  /** How far behind the replica serving the current read request is, as a share of each change's lag. */
  private behind = 1;

  /** `nowMicros`: the simulator clock, read whenever a reader resolves a version; `prng` draws replicas. */
  constructor(
    private readonly nowMicros: () => number,
    private readonly prng: Prng,
  ) {
    for (const resource of RECORD_RESOURCES) this.pending[resource] = new Map();
  }

  /** `count` replicas serve reads (1: every reader the whole lag), drawn at random or always `serving`. */
  setReplicas(count: number, serving: ReplicaServing = 'random'): void {
    this.replicaCount = count;
    this.serving = serving;
    this.behind = 1;
  }

  /** A read request arrives: the replica that serves it is chosen, for every version it resolves. */
  serveRead(): void {
    if (this.replicaCount === 1) return;
    const index = this.serving === 'random' ? this.prng.int(this.replicaCount) : this.serving;
    this.behind = index / (this.replicaCount - 1);
  }

  get lag(): number {
    return this.lagMs;
  }

  /** Applies to changes made from now on; pending ones keep the moment they were given. */
  set lag(ms: number) {
    this.lagMs = ms;
  }

  /** Whether a change of a record should bring a snapshot of its version before the change. */
  get wantsSnapshots(): boolean {
    return this.lagMs > 0;
  }

  /**
   * After a change moved `live.updatedAt`. `previous`: the version just before it (null for a create). With no lag
   * the change is visible at once, which also supersedes any older pending change.
   */
  changed(resource: RecordResource, live: StoredRecord, previous: StoredRecord | null): void {
    const map = this.pending[resource];
    if (this.lagMs <= 0) {
      map.delete(live.id);
      return;
    }
    let entry = map.get(live.id);
    if (entry) {
      const last = entry.commits[entry.commits.length - 1];
      // The live object is about to be shared with the new change: freeze what the older change showed.
      if (last && previous) last.version = previous;
    } else {
      entry = { base: previous, commits: [] };
      map.set(live.id, entry);
    }
    entry.commits.push({ stamp: live.updatedAt, visibleAt: live.updatedAt + this.lagMs * 1000, version: live });
  }

  /** The record is gone, or its latest version is to be visible at once. */
  drop(resource: RecordResource, id: string): void {
    this.pending[resource].delete(id);
  }

  hasPending(resource: RecordResource): boolean {
    return this.pending[resource].size > 0;
  }

  /** What the current read request sees of a live record: the live record, an older version, or nothing. */
  resolve(resource: RecordResource, live: StoredRecord): StoredRecord | null {
    const map = this.pending[resource];
    const entry = map.get(live.id);
    if (!entry) return live;
    const now = this.nowMicros();
    const commits = entry.commits;
    let i = commits.length - 1;
    while (i >= 0 && commits[i]!.visibleAt > now) i -= 1;
    if (i === commits.length - 1) {
      map.delete(live.id);
      return live;
    }
    if (i >= 0) {
      // Older changes are superseded by one every replica shows: keep only what can still matter.
      entry.base = commits[i]!.version;
      commits.splice(0, i + 1);
    }
    // A replica less far behind shows the newest change it has reached.
    for (let j = commits.length - 1; j >= 0 && this.behind < 1; j--) {
      const { stamp, visibleAt, version } = commits[j]!;
      if (stamp + (visibleAt - stamp) * this.behind <= now) return version;
    }
    return entry.base;
  }

  /** Frozen older versions (not the live records), for definition changes that rewrite stored values. */
  *snapshots(resource: RecordResource): Generator<StoredRecord> {
    for (const entry of this.pending[resource].values()) {
      if (entry.base) yield entry.base;
      for (let i = 0; i < entry.commits.length - 1; i++) yield (entry.commits[i] as Pending['commits'][number]).version;
    }
  }
}
