/**
 * The page walk on its own, with pages from a scripted `FetchPage` instead of HTTP (client.test.ts proves the same
 * walk through the client and a real server).
 */
import { describe, expect, it } from 'vitest';
import { InvalidResponseError } from '../../src/api/errors.js';
import { MAX_CURSOR_REPEATS, followCursors, type FetchPage } from '../../src/api/pagination.js';
import type { ListPage } from '../../src/api/types.js';

interface Fetch {
  after: string | null;
  signal: AbortSignal;
}

/** Pages by cursor (`''` for the first): each names its next cursor; answered at once unless `hold` says otherwise. */
function scripted(
  next: (after: string | null, fetchIndex: number) => string | null,
  options: { hold?: (after: string | null) => Promise<void> } = {},
): { fetchPage: FetchPage<string>; fetches: Fetch[] } {
  const fetches: Fetch[] = [];
  const fetchPage: FetchPage<string> = async (after, signal) => {
    fetches.push({ after, signal });
    await options.hold?.(after);
    signal.throwIfAborted();
    const page: ListPage<string> = {
      results: [after ?? 'first'],
      rejects: [],
      nextCursor: next(after, fetches.length - 1),
      serverDate: null,
    };
    return page;
  };
  return { fetchPage, fetches };
}

const where = { method: 'GET', path: '/v1/deals/' };

async function collect<T>(pages: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const page of pages) out.push(page);
  return out;
}

describe('followCursors', () => {
  it('follows cursors to the last page, flagging no page when no cursor repeats', async () => {
    const { fetchPage, fetches } = scripted((after) => ({ '': 'c2', c2: 'c3', c3: null })[after ?? '']!);
    const pages = await collect(followCursors(fetchPage, where));
    expect(pages.map((p) => [p.results[0], p.nextCursor, p.cursorRepeated])).toEqual([
      ['first', 'c2', undefined],
      ['c2', 'c3', undefined],
      ['c3', null, undefined],
    ]);
    expect(fetches.map((f) => f.after)).toEqual([null, 'c2', 'c3']);
  });

  it('follows a cursor repeated once and flags the page that named it', async () => {
    // c3 names c2 the first time (the list moved), then the end.
    let c3 = 0;
    const { fetchPage, fetches } = scripted((after) => (after === null ? 'c2' : after === 'c2' ? 'c3' : ++c3 === 1 ? 'c2' : null));
    const pages = await collect(followCursors(fetchPage, where));
    expect(pages.map((p) => [p.results[0], p.cursorRepeated === true])).toEqual([
      ['first', false],
      ['c2', false],
      ['c3', true],
      ['c2', true],
      ['c3', false],
    ]);
    expect(fetches.map((f) => f.after)).toEqual([null, 'c2', 'c3', 'c2', 'c3']);
  });

  it('counts repeats per walk in total, whatever the cursor, and throws one past the bound before handing that page out', async () => {
    // Every page names a cursor seen before (or the start): x, x, y, y, ...
    const { fetchPage } = scripted((_after, i) => (i < 2 ? 'x' : 'y'));
    const seen: Array<boolean> = [];
    const error = await collect(
      (async function* () {
        for await (const page of followCursors(fetchPage, { ...where, maxCursorRepeats: 2 })) {
          seen.push(page.cursorRepeated === true);
          yield page;
        }
      })(),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ code: 'invalid_response', disposition: 'fatal', path: '/v1/deals/' });
    expect((error as Error).message).toContain('loop detected in pagination');
    expect((error as Error).message).toContain('3 repeated cursors in this walk, more than the 2 it follows');
    // x new, x repeat 1, y new, y repeat 2, y repeat 3: thrown.
    expect(seen).toEqual([false, true, false, true]);
  });

  it(`follows at most ${MAX_CURSOR_REPEATS} repeats by default; with maxCursorRepeats 0 the first repeat throws`, async () => {
    const same = () => scripted(() => 'same').fetchPage;
    const flagged: boolean[] = [];
    const byDefault = await collect(
      (async function* () {
        for await (const page of followCursors(same(), where)) {
          flagged.push(page.cursorRepeated === true);
          yield page;
        }
      })(),
    ).catch((e: unknown) => e);
    expect(byDefault).toBeInstanceOf(InvalidResponseError);
    expect(flagged).toEqual([false, ...Array<boolean>(MAX_CURSOR_REPEATS).fill(true)]);

    const strict = await collect(followCursors(same(), { ...where, maxCursorRepeats: 0 })).catch((e: unknown) => e);
    expect(strict).toBeInstanceOf(InvalidResponseError);
  });

  it('follows empty pages that name a next page, and throws once more of them than maxEmptyPages come in a row: never waits for ever', async () => {
    let n = 0;
    // Every page empty, each naming a new cursor: a list that never ends.
    const endless: FetchPage<string> = async () => {
      await new Promise((resolve) => setImmediate(resolve)); // a turn of the event loop: a test timeout can fire
      return { results: [], rejects: [], nextCursor: `c${++n}`, serverDate: null };
    };
    const error = await collect(followCursors(endless, { ...where, maxEmptyPages: 5 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ code: 'invalid_response', disposition: 'fatal' });
    expect((error as Error).message).toContain('the list does not end: 6 empty pages in a row');
    // Empty pages between full ones are followed: the run of empty ones starts again after each full page.
    const gappy: FetchPage<string> = async (after) => {
      const i = after === null ? 0 : Number(after.slice(1));
      return { results: i % 4 === 3 ? ['r'] : [], rejects: [], nextCursor: i < 40 ? `c${i + 1}` : null, serverDate: null };
    };
    expect(await collect(followCursors(gappy, { ...where, maxEmptyPages: 3 }))).toHaveLength(41);
  });

  it('counts the cursor a resumed walk starts after as already given', async () => {
    const { fetchPage } = scripted((after) => (after === 'resume' ? 'resume' : null));
    const walk = followCursors(fetchPage, { ...where, after: 'resume' });
    expect((await walk.next()).value).toMatchObject({ results: ['resume'], cursorRepeated: true });
    await walk.return(undefined);
  });

  it('asks for the next page while the caller holds one, never two ahead, and aborts it when the walk is left', async () => {
    const { fetchPage, fetches } = scripted((after) => (after === null ? 'c2' : after === 'c2' ? 'c3' : null));
    const walk = followCursors(fetchPage, where);
    await walk.next();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fetches.map((f) => f.after)).toEqual([null, 'c2']);
    await walk.return(undefined);
    expect(fetches[1]!.signal.aborted).toBe(true);
  });

  it('asks for the page a response names through onCursor, before that response is validated, and reuses it', async () => {
    const fetches: Array<string | null> = [];
    let releaseFirst!: () => void;
    const fetchPage: FetchPage<string> = async (after, _signal, onCursor) => {
      fetches.push(after);
      await new Promise((resolve) => setImmediate(resolve)); // the response arrives
      if (after === null) {
        expect(onCursor('c2')).toBe(true); // the body named c2: the walk asks for it now
        await new Promise<void>((resolve) => (releaseFirst = resolve));
      }
      return { results: [after ?? 'first'], rejects: [], nextCursor: after === null ? 'c2' : null, serverDate: null };
    };
    const walk = collect(followCursors(fetchPage, where));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(fetches).toEqual([null, 'c2']);
    releaseFirst();
    expect((await walk).map((p) => p.results[0])).toEqual(['first', 'c2']);
    expect(fetches).toEqual([null, 'c2']);
  });

  it('does not ask early for a cursor seen before (it may be the one past the bound), only once its page is validated', async () => {
    const asked: Array<[string, boolean]> = [];
    let c2 = 0;
    const fetchPage: FetchPage<string> = async (after, _signal, onCursor) => {
      await new Promise((resolve) => setImmediate(resolve)); // the response arrives
      // Page c2 first names c2 again (a repeat), then c3; c3 is the last.
      const next = after === null ? 'c2' : after === 'c2' ? (++c2 === 1 ? 'c2' : 'c3') : null;
      if (after !== null && next !== null) asked.push([next, onCursor(next)]);
      return { results: [after ?? 'first'], rejects: [], nextCursor: next, serverDate: null };
    };
    const pages = await collect(followCursors(fetchPage, where));
    expect(asked).toEqual([
      ['c2', false],
      ['c3', true],
    ]);
    expect(pages.map((p) => [p.results[0], p.cursorRepeated === true])).toEqual([
      ['first', false],
      ['c2', true],
      ['c2', false],
      ['c3', false],
    ]);
  });

  it('does not hand out a page that arrived after the caller aborted', async () => {
    const controller = new AbortController();
    const { fetchPage } = scripted((after) => (after === null ? 'c2' : null), {
      hold: async (after) => {
        if (after === 'c2') controller.abort(new Error('stop here'));
      },
    });
    // The fetch itself ignores the abort (the page "arrived"): the walk must still not hand it out.
    const lenient: FetchPage<string> = (after, _signal, onCursor) => fetchPage(after, new AbortController().signal, onCursor);
    const walk = followCursors(lenient, { ...where, signal: controller.signal });
    await walk.next();
    await expect(walk.next()).rejects.toThrow('stop here');
  });
});
