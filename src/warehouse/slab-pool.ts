/**
 * Buffers that batches' sealed chunks are carved from (`ChunkCarver`, for `NdjsonRows` in rows.ts), each taken back
 * once every chunk carved from it is written (to a spill or a stage file) and reused: sealed chunks of about 50 KB,
 * allocated and freed one by one, left glibc's heap holding tens of MB (docs/performance.md). A buffer whose chunks
 * are not all known to be written (a batch abandoned) is left to the collector. It holds at most as many idle
 * buffers as batches had chunks in flight at once, never more than `keep`.
 */
export class SlabPool {
  private readonly free: Buffer[] = [];

  /**
   * @param slabBytes each buffer's size; a chunk larger than this gets a buffer of its own, outside the pool.
   * @param keep the most free buffers kept; past it, the collector's.
   */
  constructor(
    readonly slabBytes = 1024 * 1024,
    private readonly keep = 32,
  ) {}

  /** Free buffers held for reuse. */
  get idle(): number {
    return this.free.length;
  }

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.slabBytes);
  }

  give(slab: Buffer): void {
    if (this.free.length < this.keep) this.free.push(slab);
  }
}

/** A pool buffer being carved: its chunks not yet written, and whether more may still be carved from it. */
interface Slab {
  readonly buffer: Buffer;
  used: number;
  unwritten: number;
  carving: boolean;
}

/** Where a carved chunk came from, to hand to `ChunkCarver.written`: null for a buffer of its own. */
export type ChunkSource = Slab | null;

/**
 * One batch's chunks, carved in turn from its pool's buffers (none given: each chunk a buffer of its own). A buffer
 * goes back once no more is carved from it (`retire`) and every chunk carved from it is written (`written`); a
 * chunk never reported written keeps its buffer out of the pool.
 */
export class ChunkCarver {
  private slab: Slab | null = null;

  constructor(private readonly pool?: SlabPool) {}

  /** A chunk of `bytes` (its contents unset), and where it came from. */
  carve(bytes: number): { chunk: Buffer; source: ChunkSource } {
    const pool = this.pool;
    if (pool === undefined || bytes > pool.slabBytes) return { chunk: Buffer.allocUnsafe(bytes), source: null };
    if (this.slab === null || this.slab.buffer.length - this.slab.used < bytes) {
      this.retire();
      this.slab = { buffer: pool.take(), used: 0, unwritten: 0, carving: true };
    }
    const slab = this.slab;
    const chunk = slab.buffer.subarray(slab.used, slab.used + bytes);
    slab.used += bytes;
    slab.unwritten += 1;
    return { chunk, source: slab };
  }

  /** No more chunks are carved from the current buffer. */
  retire(): void {
    if (this.slab === null) return;
    this.slab.carving = false;
    this.giveBack(this.slab);
    this.slab = null;
  }

  /** The chunks from `sources` (one entry a chunk, each reported once) are written. */
  written(sources: readonly ChunkSource[]): void {
    for (const slab of sources) {
      if (slab === null) continue;
      slab.unwritten -= 1;
      this.giveBack(slab);
    }
  }

  private giveBack(slab: Slab): void {
    // Once carving stops the count only falls: a buffer goes back once.
    if (slab.unwritten === 0 && !slab.carving) this.pool!.give(slab.buffer);
  }
}
