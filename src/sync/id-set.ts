/**
 * A set of ids held as 53-bit hashes in one open-addressing table (linear probing over a Float64Array): 8 bytes a
 * slot, at most 70 % full, so 11–23 bytes per id whatever the id's length, where a `Set<number>` of the same
 * hashes costs a heap number and a hash-table entry each. Exact by hash: two ids that share a hash count as one
 * (about n / 2^53 per lookup; for a pass that costs one more pass, never a lost record).
 */
export class IdHashSet {
  private slots: Float64Array;
  private mask: number;
  private count = 0;
  /** Hash 0 marks an empty slot, so an id whose hash is 0 is kept aside. */
  private hasZero = false;

  /** @param capacity ids it holds before it first grows. @defaultValue 1024 */
  constructor(capacity = 1024) {
    let slots = 16;
    while (slots * MAX_LOAD < capacity) slots *= 2;
    this.slots = new Float64Array(slots);
    this.mask = slots - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Bytes of the table itself. */
  get bytes(): number {
    return this.slots.byteLength;
  }

  /** Adds `id`; false when it (or an id of the same hash) was there already. */
  add(id: string): boolean {
    return this.addHash(hashId(id));
  }

  has(id: string): boolean {
    const hash = hashId(id);
    if (hash === 0) return this.hasZero;
    const { slots, mask } = this;
    for (let i = (hash % 4294967296) & mask; ; i = (i + 1) & mask) {
      const slot = slots[i]!;
      if (slot === hash) return true;
      if (slot === 0) return false;
    }
  }

  private addHash(hash: number): boolean {
    if (hash === 0) {
      if (this.hasZero) return false;
      this.hasZero = true;
      this.count += 1;
      return true;
    }
    if (!this.insert(this.slots, this.mask, hash)) return false;
    this.count += 1;
    if (this.count > this.slots.length * MAX_LOAD) this.grow();
    return true;
  }

  /** Puts `hash` in the first free slot of its run; false when it is there already. */
  private insert(slots: Float64Array, mask: number, hash: number): boolean {
    // The hash's low 32 bits pick the slot: cyrb53 mixes every bit of the id into them.
    for (let i = (hash % 4294967296) & mask; ; i = (i + 1) & mask) {
      const slot = slots[i]!;
      if (slot === hash) return false;
      if (slot === 0) {
        slots[i] = hash;
        return true;
      }
    }
  }

  private grow(): void {
    const old = this.slots;
    const slots = new Float64Array(old.length * 2);
    const mask = slots.length - 1;
    for (const hash of old) if (hash !== 0) this.insert(slots, mask, hash);
    this.slots = slots;
    this.mask = mask;
  }
}

const MAX_LOAD = 0.7;

/** cyrb53: a fast 53-bit string hash (fits a JS number exactly). */
export function hashId(id: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < id.length; i++) {
    const ch = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
