import { afterEach } from 'vitest';
import type { Simulator, SimulatorOptions } from '../../src/simulator/index.js';
import { createSimulator, DEFAULT_KEYS } from '../../src/simulator/index.js';

/** Starts simulators on free ports and closes them after each test. */
export function useSimulators(): (options?: SimulatorOptions) => Promise<Simulator> {
  const running: Simulator[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.close()));
  });
  return async (options = {}) => {
    const sim = createSimulator({ size: SMALL, ...options });
    running.push(sim);
    await sim.listen(0);
    return sim;
  };
}

export const SMALL = { deals: 60, companies: 30, contacts: 80, meetingLogs: 50, contactActivities: 40, users: 8 };

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
  /** The body as sent. */
  text: string;
}

/** One request to the public API with a key (default: read). */
export async function call(
  sim: Simulator,
  method: string,
  path: string,
  options: { key?: string | null; body?: unknown } = {},
): Promise<Reply> {
  const key = options.key === undefined ? DEFAULT_KEYS.read : options.key;
  const headers: Record<string, string> = {};
  if (key !== null) headers['Authorization'] = `Bearer ${key}`;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${sim.url}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // faults may send HTML or truncated JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** Follows paging.next.after until the end; returns every page's results in order. */
export async function walkList(sim: Simulator, path: string, query: Record<string, string> = {}): Promise<any[]> {
  const out: any[] = [];
  let after: string | undefined;
  for (let guard = 0; guard < 10_000; guard++) {
    const params = new URLSearchParams(query);
    if (after) params.set('after', after);
    const reply = await call(sim, 'GET', `${path}?${params}`);
    if (reply.status !== 200) throw new Error(`list failed: ${reply.status} ${JSON.stringify(reply.body)}`);
    out.push(...reply.body.results);
    after = reply.body.paging.next?.after;
    if (!after) return out;
  }
  throw new Error('paging did not end');
}

/** Microseconds since the epoch of an ISO timestamp with 6 fractional digits and an offset. */
export function micros(iso: string): bigint {
  const m = /^(.*T\d{2}:\d{2}:\d{2})\.(\d{6})(Z|[+-]\d{2}:\d{2})$/.exec(iso);
  if (!m) throw new Error(`not a 6-digit timestamp: ${iso}`);
  const seconds = BigInt(Date.parse(`${m[1]}${m[3]}`)) / 1000n;
  return seconds * 1_000_000n + BigInt(m[2] as string);
}

export { DEFAULT_KEYS };
