/**
 * A small stand-in for the Sales Records Service, on node:http and port 0: each test scripts the answers it
 * needs. Kept apart from the real simulator on purpose, so these tests prove the client against the spec alone.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import type { RateLimiter, RateLimitObservation } from '../../src/core/rate-limiter.js';
export { freePort } from '../support/ports.js';

export const TEST_KEY = `sk_${'Ab3dE5gH7j'.repeat(5)}`;

export interface SeenRequest {
  method: string;
  /** Path without the query. */
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: SeenRequest, res: ServerResponse) => unknown;

export interface FakeService {
  baseUrl: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

export async function startFakeService(handler: Handler): Promise<FakeService> {
  const requests: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const seen: SeenRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(seen);
      void Promise.resolve(handler(seen, res)).catch((error: unknown) => {
        res.statusCode = 599;
        res.end(String(error));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers one JSON body with the rate-limit headers the spec puts on every response. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'x-ratelimit-limit': '1000',
    'x-ratelimit-remaining': '998',
    'x-ratelimit-reset': '1714555860',
    ...headers,
  });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

export function errorBody(code: string, message: string, fields?: unknown[]): unknown {
  return { error: { code, message, ...(fields ? { fields } : {}) } };
}

/** A scripted sequence: the n-th request gets the n-th handler (the last one repeats). */
export function sequence(...handlers: Handler[]): Handler {
  let n = 0;
  return (req, res) => {
    const handler = handlers[Math.min(n, handlers.length - 1)]!;
    n += 1;
    return handler(req, res);
  };
}

/** An 18-character alphanumeric id: `R` + the number, zero-padded. */
export function recordId(n: number): string {
  return `R${String(n).padStart(17, '0')}`;
}

export function record(id: string, properties: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    properties: { name: `record ${id}`, ...properties },
    created_at: '2024-05-01T09:30:00.123456+09:00',
    updated_at: '2024-05-02T00:00:00.000001Z',
  };
}

export function listBody(results: unknown[], after: string | null): unknown {
  return {
    results,
    paging: { next: after === null ? null : { after, link: `http://fake/v1/deals/?after=${after}` } },
  };
}

/** A limiter that records what the client tells it and never waits (or waits `acquireMs`). */
export interface RecordingLimiter extends RateLimiter {
  acquired: string[];
  observed: Array<{ keyId: string; observation: RateLimitObservation }>;
  paused: Array<{ keyId: string; ms: number }>;
}

export function recordingLimiter(acquireMs = 0): RecordingLimiter {
  const limiter: RecordingLimiter = {
    acquired: [],
    observed: [],
    paused: [],
    async acquire(keyIds) {
      const keyId = keyIds[0]!;
      limiter.acquired.push(keyId);
      return { keyId, waitedMs: acquireMs };
    },
    observe(keyId, observation) {
      limiter.observed.push({ keyId, observation });
    },
    pause(keyId, ms) {
      limiter.paused.push({ keyId, ms });
    },
  };
  return limiter;
}

/** A debug-level pino logger whose lines are kept for inspection. */
export function capturedLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

/** Resolves with the rejection of `promise`, failing when it fulfils. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject');
}
