import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP proxy in front of the simulator that rewrites its answers: to show the CLI, end to end, a service whose
 * responses break the spec (bad ids, wrong types, extra fields, an HTML page). `rewrite` gets the path and the
 * parsed JSON of each 2xx answer and returns the body to send instead (any JSON, or a string sent as it is),
 * or undefined to pass it through. Status, Date and rate-limit headers are passed on.
 */
export interface TamperProxy {
  url: string;
  /** Answers rewritten so far. */
  rewritten(): number;
  close(): Promise<void>;
}

export type Rewrite = (path: string, body: unknown) => unknown;

const PASSED_HEADERS = ['date', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

export async function startTamperProxy(target: string, rewrite: Rewrite): Promise<TamperProxy> {
  let count = 0;
  const readBody = async (req: IncomingMessage): Promise<Buffer> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    const upstream = await fetch(`${target}${req.url ?? '/'}`, {
      method: req.method ?? 'GET',
      headers: {
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        ...(req.headers['content-type'] ? { 'content-type': req.headers['content-type'] } : {}),
      },
      ...(body.length > 0 ? { body } : {}),
    });
    const text = await upstream.text();
    const headers: Record<string, string> = {};
    for (const name of PASSED_HEADERS) {
      const value = upstream.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    let out = text;
    let contentType = upstream.headers.get('content-type') ?? 'application/json';
    if (upstream.ok) {
      const path = new URL(req.url ?? '/', 'http://proxy').pathname;
      const replaced = rewrite(path, JSON.parse(text) as unknown);
      if (replaced !== undefined) {
        count += 1;
        if (typeof replaced === 'string') {
          out = replaced;
          contentType = replaced.trimStart().startsWith('<') ? 'text/html; charset=utf-8' : contentType;
        } else out = JSON.stringify(replaced);
      }
    }
    res.writeHead(upstream.status, { ...headers, 'content-type': contentType, 'content-length': Buffer.byteLength(out) });
    res.end(out);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    rewritten: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
