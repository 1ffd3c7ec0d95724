/** One resource's walk as the lanes see it. */
export interface LaneWalk {
  /** Every request the walk made. */
  requests: number;
  /** How long it holds its lane, in request times: its list pages one after another, its single-record GETs several at once. */
  length: number;
}

/** A walk's length: `pages` in a chain (each cursor comes with the page before it), the rest `inFlight` at a time. */
export function walkLength(requests: number, pages: number, inFlight: number): number {
  return pages + Math.ceil(Math.max(0, requests - pages) / Math.max(1, inFlight));
}

/**
 * What of the latency bound (`lanes` requests per request time) the walks can reach at all: they start in order
 * on the first free lane, as the sync's pLimit starts them, and the run lasts as long as its busiest lane. Returns
 * their requests ÷ (lanes × that lane's length): 1 when the lanes finish together, less when one long walk runs on
 * after the others are done.
 */
export function laneCeiling(walks: readonly LaneWalk[], lanes: number): number {
  const busy = Array.from({ length: Math.max(1, lanes) }, () => 0);
  for (const walk of walks) {
    const first = busy.indexOf(Math.min(...busy));
    busy[first] = busy[first]! + walk.length;
  }
  const longest = Math.max(...busy);
  const total = walks.reduce((sum, w) => sum + w.requests, 0);
  return longest === 0 ? 1 : total / (busy.length * longest);
}
