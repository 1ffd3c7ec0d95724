/**
 * What the latency bound can be reached at all when a resource's walk is one chain of requests (each page's cursor
 * comes with the page before it): walks start in order on the first free lane, as the sync's pLimit starts them,
 * and the run lasts as long as its busiest lane. Returns total requests ÷ (lanes × that lane's requests): 1 when
 * the lanes finish together, less when one long walk runs on after the others are done.
 */
export function laneCeiling(walkRequests: readonly number[], lanes: number): number {
  const busy = Array.from({ length: Math.max(1, lanes) }, () => 0);
  for (const requests of walkRequests) {
    const first = busy.indexOf(Math.min(...busy));
    busy[first] = busy[first]! + requests;
  }
  const longest = Math.max(...busy);
  const total = walkRequests.reduce((sum, r) => sum + r, 0);
  return longest === 0 ? 1 : total / (busy.length * longest);
}
