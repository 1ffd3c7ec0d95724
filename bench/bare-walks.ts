/**
 * The time a page takes for a client that does nothing with it: got requesting each list page and reading its
 * cursor, walks on concurrent lanes as the sync runs them. What no sync on this machine can beat against this
 * service (its latency, its serving, the loopback, got, two event loops sharing the cores).
 */
import got from 'got';

/**
 * Walk each of `resources` (list paths) on its own lane at once, `pages` pages each at the service's largest page
 * size, each lane on its own key; returns the mean milliseconds a page took.
 */
export async function bareMsPerPage(url: string, keys: readonly string[], resources: readonly string[], pages: number): Promise<number> {
  const http = got.extend({ retry: { limit: 0 }, headers: { accept: 'application/json' } });
  const lane = async (resource: string, key: string): Promise<{ pages: number; ms: number }> => {
    const started = performance.now();
    let after: string | null = null;
    let walked = 0;
    do {
      const body: { paging?: { next?: { after?: string } } } = await http(`${url}/v1/${resource}/`, {
        searchParams: { page_size: 200, ...(after ? { after } : {}) },
        headers: { authorization: `Bearer ${key}` },
      }).json();
      after = body.paging?.next?.after ?? null;
      walked += 1;
    } while (after !== null && walked < pages);
    return { pages: walked, ms: performance.now() - started };
  };
  const lanes = await Promise.all(resources.map((resource, i) => lane(resource, keys[i % keys.length]!)));
  return lanes.reduce((sum, l) => sum + l.ms, 0) / lanes.reduce((sum, l) => sum + l.pages, 0);
}
