/**
 * Buffers that batches' sealed chunks are carved from (`NdjsonRows`, rows.ts), each taken back once every chunk
 * carved from it is written (to a spill or a stage file) and reused: sealed chunks of about 50 KB, allocated and
 * freed one by one, left glibc's heap holding tens of MB (docs/performance.md). A buffer whose chunks are not all
 * known to be written (a batch abandoned) is left to the collector. It holds at most as many idle buffers as
 * batches had in flight at once (14 MB in a 1M-record sync), never more than `keep`.
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
