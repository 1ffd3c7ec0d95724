import { describe, expect, it } from 'vitest';
import { BodyPool } from '../../src/api/body-pool.js';
import { SalesyncError } from '../../src/core/errors.js';

describe('BodyPool', () => {
  it('lends each body out at once a buffer of its own, and reuses one given back', () => {
    const pool = new BodyPool(16);
    const earlier = pool.lend();
    earlier.append(Buffer.from('{}'));
    earlier.release();
    const first = pool.lend();
    const second = pool.lend();
    first.append(Buffer.from('{"page":1}'));
    second.append(Buffer.from('{"page":2}'));
    expect(first.bytes.buffer).not.toBe(second.bytes.buffer);
    expect([first.bytes.toString(), second.bytes.toString()]).toEqual(['{"page":1}', '{"page":2}']);
    const firstBuffer = first.bytes.buffer;
    first.release();
    const third = pool.lend();
    third.append(Buffer.from('{"page":3}'));
    expect(third.bytes.buffer).toBe(firstBuffer);
    expect(second.bytes.toString()).toBe('{"page":2}');
  });

  it('doubles a buffer a body outgrows, keeping its bytes, and keeps the grown one', () => {
    const pool = new BodyPool(4);
    const body = pool.lend();
    body.append(Buffer.from('abc'));
    body.append(Buffer.from('defghijkl'));
    expect(body.bytes.toString()).toBe('abcdefghijkl');
    // 4 doubled until 12 bytes fit.
    expect(body.bytes.buffer.byteLength).toBe(16);
    body.release();
    const next = pool.lend();
    next.append(Buffer.from('x'));
    expect(next.bytes.buffer.byteLength).toBe(16);
  });

  it('keeps at most `keep` idle buffers, none larger than `keepBytes`', () => {
    const pool = new BodyPool(8, 2, 16);
    const bodies = [1, 2, 3].map(() => pool.lend());
    for (const body of bodies) body.append(Buffer.from('12345678'));
    for (const body of bodies) body.release();
    expect(pool.idle).toBe(2);
    const outsized = pool.lend();
    outsized.append(Buffer.alloc(17));
    outsized.release();
    expect(pool.idle).toBe(1);
  });

  it('gives a buffer back once however often its body is released, and refuses the body afterwards', () => {
    const pool = new BodyPool(8);
    const body = pool.lend();
    body.append(Buffer.from('{}'));
    body.release();
    body.release();
    expect(pool.idle).toBe(1);
    const [a, b] = [pool.lend(), pool.lend()];
    a.append(Buffer.from('a'));
    b.append(Buffer.from('b'));
    expect(a.bytes.buffer).not.toBe(b.bytes.buffer);
    expect(() => body.bytes).toThrow(SalesyncError);
    expect(() => body.append(Buffer.from('x'))).toThrow(SalesyncError);
  });

  it('takes no buffer for a body without bytes', () => {
    const pool = new BodyPool(8);
    const body = pool.lend();
    expect(body.bytes).toHaveLength(0);
    body.release();
    expect(pool.idle).toBe(0);
  });
});
