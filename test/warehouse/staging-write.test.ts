import { describe, expect, it } from 'vitest';
import { unwritten } from '../../src/warehouse/staging.js';

const text = (chunks: readonly Buffer[]) => chunks.map((c) => c.toString());

describe('writing a stage file from its chunks', () => {
  const chunks = [Buffer.from('abc'), Buffer.from(''), Buffer.from('defg'), Buffer.from('hi')];

  it('after a short write, sends again exactly the bytes not written, in order', () => {
    expect(text(unwritten(chunks, 0))).toEqual(['abc', 'defg', 'hi']);
    expect(text(unwritten(chunks, 2))).toEqual(['c', 'defg', 'hi']);
    expect(text(unwritten(chunks, 3))).toEqual(['defg', 'hi']);
    expect(text(unwritten(chunks, 5))).toEqual(['fg', 'hi']);
    expect(text(unwritten(chunks, 8))).toEqual(['i']);
  });

  it('leaves nothing once every byte is written', () => {
    expect(unwritten(chunks, 9)).toEqual([]);
    expect(unwritten([Buffer.from('')], 0)).toEqual([]);
  });
});
