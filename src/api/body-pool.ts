/**
 * Buffers that answers' bodies are read into, reused from one answer to the next: a fresh buffer per page, freed
 * once the page was parsed, left holes in glibc's heap that it never gave back. Each body is written into a buffer
 * lent to it alone (`PooledBody`), which doubles when the body outgrows it and comes back once the body was read.
 */
import { SalesyncError } from '../core/errors.js';

export class BodyPool {
  private readonly free: Buffer[] = [];

  /**
   * @param firstBytes a new buffer's size: a list page of the largest size fits without growing.
   * @param keep the most idle buffers kept; past it, the collector's.
   * @param keepBytes the largest buffer kept: one outsized body does not pin its buffer for the life of the client.
   */
  constructor(
    readonly firstBytes = 128 * 1024,
    private readonly keep = 8,
    private readonly keepBytes = 1024 * 1024,
  ) {}

  /** Idle buffers held for reuse. */
  get idle(): number {
    return this.free.length;
  }

  /** A body to write an answer into; its buffer is taken from the pool on its first bytes. */
  lend(): PooledBody {
    return new PooledBody(this);
  }

  /** A buffer no other body is written into until it is given back. */
  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.firstBytes);
  }

  give(buffer: Buffer): void {
    if (this.free.length < this.keep && buffer.length <= this.keepBytes) this.free.push(buffer);
  }
}

const NO_BYTES = Buffer.alloc(0);

/** One answer's body, in a buffer lent by its pool until `release`. */
export class PooledBody {
  private buffer: Buffer | null = null;
  private length = 0;
  private released = false;

  constructor(private readonly pool: BodyPool) {}

  append(chunk: Buffer): void {
    if (this.released) throw new SalesyncError('internal', 'a pooled body was written after its release');
    let buffer = this.buffer ?? (this.buffer = this.pool.take());
    const needed = this.length + chunk.length;
    if (needed > buffer.length) {
      let size = buffer.length * 2;
      while (size < needed) size *= 2;
      const grown = Buffer.allocUnsafeSlow(size);
      buffer.copy(grown, 0, 0, this.length);
      // Outgrown: the pool keeps the larger one once this body is read.
      buffer = this.buffer = grown;
    }
    chunk.copy(buffer, this.length);
    this.length = needed;
  }

  /** The bytes written so far: a view of the lent buffer, valid only until `release`. */
  get bytes(): Buffer {
    if (this.released) throw new SalesyncError('internal', 'a pooled body was read after its release');
    return this.buffer === null ? NO_BYTES : this.buffer.subarray(0, this.length);
  }

  /** Gives the buffer back (once: a second call does nothing); another body's bytes will overwrite it. */
  release(): void {
    if (this.released) return;
    this.released = true;
    if (this.buffer !== null) this.pool.give(this.buffer);
    this.buffer = null;
  }
}
