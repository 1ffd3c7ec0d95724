import { randomInt } from 'node:crypto';

/**
 * A set of ids held as 48-bit hashes, 5 bytes a slot: the hash's top 8 bits pick one of 256 open-addressing tables
 * (linear probing, at most 70 % full) and are not stored, 32 more go in a Uint32Array and 8 in a Uint8Array, so a
 * few bytes per id whatever the id's length (a million ids: 10 MB, where 53-bit hashes in one Float64Array took 16).
 * Exact by hash: two ids that share one count as one, about n² / 2^49 times in a pass of n ids (0.7 % at two
 * million), which costs that pass's walk one more pass; each set hashes with a seed of its own, so the next pass
 * does not meet the same pair again.
 */
export class IdHashSet {
  private readonly shards: Shard[];
  private readonly seed: number;
  private count = 0;
  /** The last id's hash, written in place rather than returned as a pair: a pass hashes every record it lists. */
  private readonly hashed = new Uint32Array(2);

  /**
   * @param capacity ids it holds before it first grows. @defaultValue 4096
   * @param seed of the hash. @defaultValue a random one
   */
  constructor(capacity = 4096, seed = randomInt(2 ** 32)) {
    this.seed = seed >>> 0;
    let slots = MIN_SHARD_SLOTS;
    while (slots * SHARDS * MAX_LOAD < capacity) slots *= 2;
    this.shards = Array.from({ length: SHARDS }, () => newShard(slots));
  }

  get size(): number {
    return this.count;
  }

  /** Bytes of the tables themselves. */
  get bytes(): number {
    let bytes = 0;
    for (const shard of this.shards) bytes += shard.keys.byteLength + shard.tags.byteLength;
    return bytes;
  }

  /** Adds `id`; false when it (or an id of the same hash) was there already. */
  add(id: string): boolean {
    hashId(id, this.seed, this.hashed);
    const key = this.hashed[0]!;
    const high = this.hashed[1]!;
    const shard = this.shards[high >>> 24]!;
    if (!insert(shard, key, tagOf(high))) return false;
    this.count += 1;
    shard.count += 1;
    if (shard.count > shard.keys.length * MAX_LOAD) grow(shard);
    return true;
  }

  has(id: string): boolean {
    hashId(id, this.seed, this.hashed);
    const key = this.hashed[0]!;
    const high = this.hashed[1]!;
    const { keys, tags, mask } = this.shards[high >>> 24]!;
    const tag = tagOf(high);
    for (let i = key & mask; ; i = (i + 1) & mask) {
      const t = tags[i]!;
      if (t === 0) return false;
      if (t === tag && keys[i] === key) return true;
    }
  }
}

interface Shard {
  keys: Uint32Array;
  /** 0: an empty slot; else the hash's 8 bits below the shard's, as 1–255. */
  tags: Uint8Array;
  mask: number;
  count: number;
}

const SHARDS = 256;
const MIN_SHARD_SLOTS = 16;
const MAX_LOAD = 0.7;

function newShard(slots: number): Shard {
  return { keys: new Uint32Array(slots), tags: new Uint8Array(slots), mask: slots - 1, count: 0 };
}

/** A tag is never 0, the empty slot's mark: 255 values of the hash's second byte. */
function tagOf(h2: number): number {
  return 1 + (((h2 >>> 16) & 0xff) % 255);
}

/** Puts (`key`, `tag`) in the first free slot of its run (the key's low bits pick it); false when it is there. */
function insert(shard: Shard, key: number, tag: number): boolean {
  const { keys, tags, mask } = shard;
  for (let i = key & mask; ; i = (i + 1) & mask) {
    const t = tags[i]!;
    if (t === 0) {
      keys[i] = key;
      tags[i] = tag;
      return true;
    }
    if (t === tag && keys[i] === key) return false;
  }
}

function grow(shard: Shard): void {
  const { keys, tags } = shard;
  const next = newShard(keys.length * 2);
  for (let i = 0; i < keys.length; i++) if (tags[i] !== 0) insert(next, keys[i]!, tags[i]!);
  shard.keys = next.keys;
  shard.tags = next.tags;
  shard.mask = next.mask;
}

/** cyrb53's two 32-bit halves of `id`'s hash under `seed`, into `out[0]` and `out[1]`. */
export function hashId(id: string, seed: number, out: Uint32Array): void {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < id.length; i++) {
    const ch = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  out[0] = h1;
  out[1] = h2;
}
