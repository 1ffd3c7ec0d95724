/**
 * One walk over a cursor-paginated list: follows `paging.next.after` from page to page, reads one page ahead, and
 * stops a service that sends it round in circles. Knows nothing of HTTP: pages come from a `FetchPage`.
 *
 * Read-ahead: the next page is asked for before this one is handed out, so what the caller does with a page overlaps
 * the service's latency on the next. While the walk waits for a page, that is as soon as the page's cursor is read
 * from the response (`onCursor`), before the page is validated; the page then hands its validated cursor over, and
 * a request made for another cursor (the page was retried and came back different, or the cursor was misread from
 * the response's text) is aborted. Never more than one page ahead of the caller. A page that arrives after the
 * caller's signal fired is not handed out. A walk left early (return, throw, abort) aborts whatever it asked for.
 *
 * Repeated cursors: a cursor the service already gave earlier in this walk is followed again (a list that moves
 * under the walk may send one back) and the page naming it is handed out with `cursorRepeated: true`, so the caller
 * can treat the pass as not clean. Past `maxCursorRepeats` such repeats in one walk, it is a loop: the walk throws
 * `invalid_response` ("loop detected in pagination") before handing out the page that named the cursor.
 *
 * Empty pages: a page with no records that still names a next cursor is followed (the spec does not forbid one),
 * but past `maxEmptyPages` of them in a row the list is taken for one that never ends, and the walk throws
 * `invalid_response` rather than wait for ever.
 */
import { InvalidResponseError } from './errors.js';
import type { ListPage } from './types.js';

/** @defaultValue of FollowCursorsOptions.maxCursorRepeats: repeated cursors one walk follows before it calls it a loop. */
export const MAX_CURSOR_REPEATS = 3;

/** @defaultValue of FollowCursorsOptions.maxEmptyPages: empty pages with a next cursor followed in a row. */
export const MAX_EMPTY_PAGES = 100;

/**
 * Fetches the page after `after` (null: the first page), rejecting once `signal` fires. Calls `onCursor` with the
 * next page's cursor as soon as the body names it, before the page is validated; `onCursor` answers true when it
 * asked for that page (the fetch may then yield a turn so that request leaves first). It may call `onCursor` more than
 * once (a retried page); only the first call per walk step can be taken.
 */
export type FetchPage<T> = (after: string | null, signal: AbortSignal, onCursor: (cursor: string) => boolean) => Promise<ListPage<T>>;

export interface FollowCursorsOptions {
  /** Cursor to continue from (a resumed walk); counts as given by the service. @defaultValue null: the first page */
  after?: string | null | undefined;
  /** The caller's signal: aborts the walk's requests; a page arriving after it fired is not handed out. */
  signal?: AbortSignal | undefined;
  /** The request, for the loop error: `GET`, `/v1/deals/`. */
  method: string;
  path: string;
  /** Repeated cursors followed in one walk before it throws. @defaultValue MAX_CURSOR_REPEATS */
  maxCursorRepeats?: number;
  /** Empty pages naming a next cursor followed in a row before it throws. @defaultValue MAX_EMPTY_PAGES */
  maxEmptyPages?: number;
}

export async function* followCursors<T>(fetchPage: FetchPage<T>, options: FollowCursorsOptions): AsyncGenerator<ListPage<T>> {
  const maxRepeats = options.maxCursorRepeats ?? MAX_CURSOR_REPEATS;
  const maxEmpty = options.maxEmptyPages ?? MAX_EMPTY_PAGES;
  let emptyInARow = 0;
  const seen = new Set<string>();
  if (options.after) seen.add(options.after);
  let repeats = 0;
  const ahead = new AbortController();
  const walkSignal = options.signal ? AbortSignal.any([options.signal, ahead.signal]) : ahead.signal;
  type Request = { request: Promise<ListPage<T>>; abort: () => void };
  // Asked for from a response not yet validated; taken over once that page names the same cursor.
  let peeked = null as (Request & { cursor: string }) | null;
  let waiting = false;
  const requestPage = (after: string | null): Request => {
    const own = new AbortController();
    const request = fetchPage(after, AbortSignal.any([walkSignal, own.signal]), (cursor) => {
      // A cursor seen before is followed only once its page is validated: it may be the one past the bound.
      if (!waiting || peeked !== null || seen.has(cursor)) return false;
      peeked = { cursor, ...requestPage(cursor) };
      return true;
    });
    request.catch(() => undefined); // observed when awaited; one abandoned by an early exit is not unhandled
    return { request, abort: () => own.abort() };
  };
  let next: Promise<ListPage<T>> | null = requestPage(options.after ?? null).request;
  let pages = 0;
  try {
    while (next) {
      waiting = true;
      const page: ListPage<T> = await next.finally(() => (waiting = false));
      next = null;
      const early = peeked;
      peeked = null;
      options.signal?.throwIfAborted();
      pages += 1;
      const repeated = page.nextCursor !== null && seen.has(page.nextCursor);
      if (repeated && ++repeats > maxRepeats) {
        throw new InvalidResponseError({
          method: options.method,
          path: options.path,
          detail:
            `loop detected in pagination: paging.next.after ${JSON.stringify(truncate(page.nextCursor!, 40))} came back on ` +
            `page ${pages}: ${repeats} repeated cursors in this walk, more than the ${maxRepeats} it follows`,
          attempts: 1,
          disposition: 'fatal',
        });
      }
      emptyInARow = page.nextCursor !== null && page.results.length + page.rejects.length === 0 ? emptyInARow + 1 : 0;
      if (emptyInARow > maxEmpty) {
        throw new InvalidResponseError({
          method: options.method,
          path: options.path,
          detail: `the list does not end: ${emptyInARow} empty pages in a row, each naming a next page (page ${pages})`,
          attempts: 1,
          disposition: 'fatal',
        });
      }
      if (page.nextCursor !== null) {
        seen.add(page.nextCursor);
        next = early?.cursor === page.nextCursor ? early.request : requestPage(page.nextCursor).request;
      }
      if (early && next !== early.request) early.abort();
      yield repeated ? { ...page, cursorRepeated: true } : page;
    }
  } finally {
    // Whatever is still on its way (the next page, or one asked for from a page that then failed) is dropped.
    ahead.abort();
  }
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
