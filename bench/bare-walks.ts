/**
 * The time a page takes for a client that does nothing with it: got requesting each list page and reading its
 * cursor from the bytes (as the sync does, before any parse), walks on concurrent lanes as the sync runs them. What no sync on this machine can beat against this
 * service (its latency, its serving, the loopback, got, two event loops sharing the cores).
 */
import got from 'got';
import { DEFAULT_PAGE_SIZE, peekNextCursorInText } from '../src/api/client.js';
import { parseJsonBytes } from '../src/api/json-bytes.js';

/**
 * Walk each of `resources` (list paths) on its own lane at once, `pages` pages each at the sync's page size, the
 * requests taking the keys in turn (as the sync's pool spreads them, so no key goes past its own rate); returns
 * the mean milliseconds a page took.
 */
export async function bareMsPerPage(url: string, keys: readonly string[], resources: readonly string[], pages: number): Promise<number> {
  const http = got.extend({ retry: { limit: 0 }, headers: { accept: 'application/json' } });
  let sent = 0;
  const lane = async (resource: string): Promise<{ pages: number; ms: number }> => {
    const started = performance.now();
    let after: string | null = null;
    let walked = 0;
    do {
      // Bytes, as the sync reads them (a large page decoded whole costs a millisecond: see parseJsonBytes).
      const bytes = await http(`${url}/v1/${resource}/`, {
        searchParams: { page_size: DEFAULT_PAGE_SIZE, ...(after ? { after } : {}) },
        headers: { authorization: `Bearer ${keys[sent++ % keys.length]!}` },
      }).buffer();
      after =
        peekNextCursorInText(bytes) ?? (parseJsonBytes(bytes) as { paging?: { next?: { after?: string } } }).paging?.next?.after ?? null;
      walked += 1;
    } while (after !== null && walked < pages);
    return { pages: walked, ms: performance.now() - started };
  };
  const lanes = await Promise.all(resources.map(lane));
  return lanes.reduce((sum, l) => sum + l.ms, 0) / lanes.reduce((sum, l) => sum + l.pages, 0);
}
