import { describe, expect, it } from 'vitest';
import { jsonBytes } from '../../src/simulator/body-bytes.js';

describe('the simulator serializes a body', () => {
  it('into the very bytes JSON.stringify gives, array members an element at a time', () => {
    const date = new Date(Date.UTC(2026, 10, 29));
    const bodies: unknown[] = [
      { results: [{ id: 'a', properties: { name: '追加 "x"', n: 1.5, none: null } }, { id: 'b' }], paging: { next: null } },
      { results: [], paging: { next: { after: 'c', link: '/v1/deals/?after=c' } } },
      { first: undefined, results: [undefined, () => 1, date, [1, [2]]], skipped: undefined, last: 'z' },
      { only: undefined },
      { a: 1, list: [1, 2], b: [], c: { d: [3] } },
      { error: { code: 'not_found', message: 'no such record' } },
      [1, { a: 2 }],
      'text',
      null,
      date,
      { toJSON: () => ({ replaced: true }) },
    ];
    for (const body of bodies) expect(jsonBytes(body).toString()).toBe(JSON.stringify(body));
  });

  it('indented as JSON.stringify indents it, for the unkind layout', () => {
    const body = { results: [{ id: 'a' }], paging: { next: null } };
    expect(jsonBytes(body, 2).toString()).toBe(JSON.stringify(body, null, 2));
  });
});
