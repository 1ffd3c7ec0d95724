import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseJsonBytes } from '../../src/api/json-bytes.js';

/** What JSON.parse makes of the bytes' text: the value, or that it threw a SyntaxError. */
function reference(bytes: Buffer): { value: unknown } | { threw: true } {
  try {
    return { value: JSON.parse(bytes.toString('utf8')) as unknown };
  } catch (error) {
    expect(error).toBeInstanceOf(SyntaxError);
    return { threw: true };
  }
}

function outcome(bytes: Buffer): { value: unknown } | { threw: true } {
  try {
    return { value: parseJsonBytes(bytes) };
  } catch (error) {
    expect(error).toBeInstanceOf(SyntaxError);
    return { threw: true };
  }
}

/** A list page as the service sends one: records with text in several scripts, and strings that look like JSON. */
function page(records: number, seed = 1): Record<string, unknown> {
  let state = seed;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const texts = ['追加ライセンス', 'Überweisung "Q3"', 'a\\b', '],[{"x":1}', 'tab\there', '😀 emoji', 'line\nbreak', ''];
  return {
    results: Array.from({ length: records }, (_, i) => ({
      id: `id${String(i).padStart(16, '0')}`,
      properties: {
        name: `${texts[Math.floor(next() * texts.length)]} ${i}`,
        amount: Math.floor(next() * 1e9) / 100,
        tags: i % 3 === 0 ? [] : ['a', { nested: [1, [2, '"]'], null] }],
        empty: {},
        flag: next() < 0.5,
        note: null,
      },
      created_at: '2024-01-01T00:00:00.000000Z',
    })),
    paging: { next: { after: 'cursor"with\\escapes', link: '/v1/deals/?after=x' } },
    other: [1, 2, 3],
  };
}

describe('parseJsonBytes', () => {
  afterEach(() => vi.restoreAllMocks());

  it('gives what JSON.parse gives for a large list page, compact or indented', () => {
    for (const text of [JSON.stringify(page(600)), JSON.stringify(page(400, 7), null, 2), ` \n${JSON.stringify(page(300, 3))}\r\n\t`]) {
      const bytes = Buffer.from(text);
      expect(bytes.length).toBeGreaterThan(48 * 1024);
      expect(parseJsonBytes(bytes)).toEqual(JSON.parse(text));
    }
  });

  it('parses an element larger than a group, and the groups of pages after it, each from its own bytes', () => {
    const large = page(300, 5) as { results: Record<string, unknown>[] };
    large.results.splice(150, 0, { id: 'large', properties: { text: '長い'.repeat(40_000) } });
    // Each page's groups are copied to the same place in turn: none may keep bytes of the one before.
    for (const value of [large, page(500, 2), page(200, 9), large]) {
      const text = JSON.stringify(value);
      expect(parseJsonBytes(Buffer.from(text))).toEqual(JSON.parse(text));
    }
  });

  it('never decodes more than 64 KiB of a large body into one string', () => {
    const bytes = Buffer.from(JSON.stringify(page(2000)));
    const decode = vi.spyOn(Buffer.prototype, 'toString');
    parseJsonBytes(bytes);
    const spans = decode.mock.calls.map(
      (args, i) => ((args[2] as number | undefined) ?? (decode.mock.contexts[i] as Buffer).length) - ((args[1] as number | undefined) ?? 0),
    );
    expect(decode).toHaveBeenCalled();
    expect(Math.max(...spans)).toBeLessThanOrEqual(64 * 1024);
  });

  it('keeps the last of a repeated member, array or not, and a member named __proto__ as an own property', () => {
    const filler = `"pad":"${'x'.repeat(40_000)}"`;
    for (const text of [
      `{${filler},"results":[1,2],"results":5}`,
      `{${filler},"results":5,"results":[1,2]}`,
      `{${filler},"results":[1,2],"results":[3]}`,
      `{${filler},"results":[1],"results":[]}`,
      `{${filler},"__proto__":[1,2],"results":[]}`,
    ]) {
      const parsed = parseJsonBytes(Buffer.from(text));
      expect(parsed).toEqual(JSON.parse(text));
      expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
      expect(Object.keys(parsed as object)).toEqual(Object.keys(JSON.parse(text) as object));
    }
  });

  it('mends a lone surrogate in any string, keys included, to U+FFFD, small body or large, and keeps a pair whole', () => {
    const cut = '商談メモ😀'.slice(0, 5);
    const record = (i: number) => ({ id: `r${i}`, properties: { memo: i === 150 ? cut : '😀 whole', [`k${cut}`]: [cut, 'ok'] } });
    for (const count of [1, 300]) {
      const bytes = Buffer.from(JSON.stringify({ results: Array.from({ length: count }, (_, i) => record(i)), paging: { next: null } }));
      expect(bytes.includes('\\ud83d')).toBe(true);
      const parsed = parseJsonBytes(bytes) as { results: Array<{ properties: Record<string, unknown> }> };
      const last = parsed.results.at(-1)!.properties;
      expect(last[`k商談メモ\uFFFD`]).toEqual(['商談メモ\uFFFD', 'ok']);
      if (count === 300) expect(parsed.results[150]!.properties.memo).toBe('商談メモ\uFFFD');
      expect(parsed.results[0]!.properties.memo).toBe(count === 1 ? '😀 whole' : '😀 whole');
      expect(JSON.stringify(parsed)).not.toMatch(/\\ud[89a-f]/i);
    }
  });

  it('skips a leading byte order mark, which JSON.parse would reject, small body or large', () => {
    const pad = 'x'.repeat(40_000);
    expect(parseJsonBytes(Buffer.from(`\uFEFF{"results":[],"pad":"${pad}"}`))).toEqual({ results: [], pad });
    expect(parseJsonBytes(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"results":[],"paging":{"next":null}}')]))).toEqual({
      results: [],
      paging: { next: null },
    });
  });

  it('rejects exactly the large bodies JSON.parse rejects', () => {
    const pad = 'x'.repeat(40_000);
    const bad = [
      `{"results":[1,2,],"pad":"${pad}"}`,
      `{"results":[,1],"pad":"${pad}"}`,
      `{"results":[1 2],"pad":"${pad}"}`,
      `{"results":[1,,2],"pad":"${pad}"}`,
      `{"results":[1],"pad":"${pad}"} x`,
      `{"results":[1],"pad":"${pad}"}}`,
      `{"results":[1],"pad":"${pad}`,
      `{"results" [1],"pad":"${pad}"}`,
      `{[1],"pad":"${pad}"}`,
      `{"results":[{"a":1],"pad":"${pad}"}`,
      `{"results":["\u0001"],"pad":"${pad}"}`,
    ];
    for (const text of bad) {
      expect(reference(Buffer.from(text)), text.slice(0, 40)).toEqual({ threw: true });
      expect(outcome(Buffer.from(text)), text.slice(0, 40)).toEqual({ threw: true });
    }
    // A large body that is not an object is JSON.parse's whole.
    expect(parseJsonBytes(Buffer.from(`[{"results":[]},"${pad}"]`))).toEqual([{ results: [] }, pad]);
  });

  it('agrees with JSON.parse on every large page cut short, or with a byte changed, at random places', () => {
    const whole = Buffer.from(JSON.stringify(page(150, 11)));
    let state = 5;
    const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const structural = [...'{}[],:"\\ 0an'].map((c) => c.charCodeAt(0));
    for (let trial = 0; trial < 300; trial += 1) {
      const at = Math.floor(next() * whole.length);
      const cut = whole.subarray(0, Math.max(at, 33 * 1024));
      const changed = Buffer.from(whole);
      changed[at] = structural[Math.floor(next() * structural.length)]!;
      for (const bytes of [cut, changed]) expect(outcome(bytes)).toEqual(reference(bytes));
    }
  });
});
