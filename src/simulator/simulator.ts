import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdmin } from './admin.js';
import { adminRoutes, handleAdmin } from './admin-http.js';
import { bearerToken, KeyRing, roleAllows } from './auth.js';
import { Corruptions } from './corruption.js';
import { invalidRequest, MESSAGES, ServiceError } from './errors.js';
import { FaultInjector } from './faults.js';
import type { RuntimeKnobs } from './knobs.js';
import {
  checkCommitLag,
  checkCommitLagScope,
  checkDefinitionsListing,
  checkReadReplicas,
  checkHook,
  checkSummaryStatuses,
  mergeClock,
} from './knobs.js';
import type { FaultKind, Role, Simulator, SimulatorAdmin, SimulatorOptions, SimulatorSizes } from './types.js';
import { deriveSeed } from './prng.js';
import { MAX_PAGE_SIZE, PublicApi } from './public-api.js';
import { SlidingWindowLimiter } from './rate-limiter.js';
import { RequestStats } from './request-stats.js';
import { jsonBytes } from './body-bytes.js';
import { SalesData } from './sales-data.js';
import { seedData } from './seed-data.js';
import { createChangeClock } from './timestamps.js';

/** Fixed, valid-format keys (`sk_` + 44 base62 characters), one per role. */
export const DEFAULT_KEYS = {
  read: 'sk_SimRead0000000000000000000000000000000000000001',
  analyst: 'sk_SimAnalyst000000000000000000000000000000000002',
  write: 'sk_SimWrite000000000000000000000000000000000000003',
  admin: 'sk_SimAdmin000000000000000000000000000000000000004',
} as const satisfies Record<Role, string>;

export const DEFAULT_SIZES: SimulatorSizes = {
  deals: 500,
  companies: 200,
  contacts: 800,
  meetingLogs: 300,
  contactActivities: 400,
  users: 20,
};

const DEFAULT_EPOCH = Date.UTC(2025, 0, 1);
const MAX_BODY_BYTES = 1_000_000;
const JSON_TYPE = 'application/json; charset=utf-8';

export function createSimulator(options: SimulatorOptions = {}): Simulator {
  const seed = options.seed ?? 1;
  const nowMs = options.now ?? Date.now;
  const sizes: SimulatorSizes = { ...DEFAULT_SIZES, ...options.size };

  const cursorKind = options.cursorKind ?? 'keyset';
  if (cursorKind !== 'keyset' && cursorKind !== 'offset') throw new Error(`unknown cursorKind ${String(cursorKind)}`);
  const usersCursorKind = options.usersCursorKind ?? 'keyset';
  if (usersCursorKind !== 'keyset' && usersCursorKind !== 'offset') throw new Error(`unknown usersCursorKind ${String(usersCursorKind)}`);
  const maxPageSize = options.maxPageSize ?? MAX_PAGE_SIZE;
  if (!Number.isInteger(maxPageSize) || maxPageSize < 1 || maxPageSize > MAX_PAGE_SIZE) {
    throw new Error(`maxPageSize must be an integer from 1 to ${MAX_PAGE_SIZE}, not ${String(maxPageSize)}`);
  }
  const jsonLayout = options.jsonLayout ?? 'compact';
  if (jsonLayout !== 'compact' && jsonLayout !== 'unkind') throw new Error(`unknown jsonLayout ${String(jsonLayout)}`);
  const indent = jsonLayout === 'unkind' ? 2 : undefined;
  const definitionsListing = checkDefinitionsListing(options.definitionsListing ?? {});

  const data = new SalesData(options.listOrder ?? 'updated_at', seed);
  if (options.summaryStatuses) data.summaryStatuses = checkSummaryStatuses(options.summaryStatuses);
  data.rotatingSummaries = options.rotatingSummaries === true;
  const newest = seedData(data, sizes, seed, options.epoch ?? DEFAULT_EPOCH);
  // A service lists from an index: sort the seeded records now, not inside the first list page's latency (a
  // 400k-record resource took about a second, which every walk's first page waited out and a bare client did not).
  for (const store of Object.values(data.stores)) store.ordered();
  data.clock = createChangeClock(nowMs, newest, options.wholeSecondStamps === true);
  data.nowMs = nowMs;
  data.lag.lag = checkCommitLag(options.commitLagMs ?? 0);
  data.lagScope = checkCommitLagScope(options.commitLagScope ?? 'all');
  const replicas = checkReadReplicas(options.readReplicas ?? 1);
  data.lag.setReplicas(replicas.count, replicas.serving);
  const knobs: RuntimeKnobs = {
    onListPage: checkHook(options.onListPage ?? null),
    clock: mergeClock({ dateSkewMs: 0, omitDate: false }, options.clock ?? {}),
    cursorEpoch: 0,
    refusedCursor: 'invalid_request',
    listedTwice: new Set(),
  };
  const corruptions = new Corruptions();

  const keys = new KeyRing();
  for (const { key, role } of options.keys ?? Object.entries(DEFAULT_KEYS).map(([role, key]) => ({ key, role: role as Role }))) {
    keys.add(key, role);
  }
  const limiter = new SlidingWindowLimiter(options.perKeyPerMinute ?? 1000, options.perOrgPerMinute ?? 5000);
  const faults = new FaultInjector(deriveSeed(seed, 'faults'));
  if (options.faults) faults.set(options.faults);
  const stats = new RequestStats();
  // The hook's event carries the admin, which is created below (it is only read when a request arrives).
  let adminRef: SimulatorAdmin | null = null;
  // The key cursors are signed with: a new one from `expireCursors` on, so every cursor given before fails its check.
  const cursorSecret = () => (knobs.cursorEpoch === 0 ? `cursor-${seed}` : `cursor-${seed}-${knobs.cursorEpoch}`);
  const api = new PublicApi(data, cursorSecret, {
    cursorKind,
    usersCursorKind,
    maxPageSize,
    updatedAfterDigits: options.updatedAfterDigits ?? Infinity,
    tiesOrderedByPage: options.tiesOrderedByPage === true,
    cursorsBoundToKey: options.cursorsBoundToKey ?? false,
    liveKeys: () => keys.list(),
    singleViewShape: options.singleViewShape ?? 'record',
    definitionsListing,
    overlappingPages: options.overlappingPages === 'ties' ? 'ties' : options.overlappingPages === true ? 'last' : 'none',
    listedTwice: (resource, id) => knobs.listedTwice.has(`${resource}/${id}`),
    pagingFirst: jsonLayout === 'unkind',
    corruptions,
    takeRepeatPage: (path) => {
      if (!faults.takeRepeatPage(path)) return false;
      stats.fault('repeatPage');
      return true;
    },
    refusedCursor: () => knobs.refusedCursor,
    listPageHook: () => {
      const hook = knobs.onListPage;
      if (!hook) return null;
      return (resource, pageNumber, served) => hook({ resource, pageNumber, served, admin: adminRef as SimulatorAdmin });
    },
  });
  const admin = createAdmin({ data, keys, faults, stats, nowMs, corruptions, knobs });
  adminRef = admin;
  const routes = adminRoutes(admin);

  let server: Server | null = null;
  let url = '';
  let closing = false;
  const timers = new Set<NodeJS.Timeout>();

  /** `bytes`: a JSON document already serialized and encoded, so the send itself is only a copy to the socket. */
  const sendJsonBytes = (res: ServerResponse, status: number, bytes: Buffer, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { ...headers, 'Content-Type': JSON_TYPE, 'Content-Length': bytes.length });
    res.end(bytes);
  };
  const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void =>
    sendJsonBytes(res, status, jsonBytes(body), headers);

  /** The `Date` of a public response: the simulator clock (skewed), or none; Node's own is switched off. */
  const dateHeader = (res: ServerResponse): Record<string, string> => {
    res.sendDate = false;
    const { dateSkewMs, omitDate } = knobs.clock;
    return omitDate ? {} : { Date: new Date(nowMs() + dateSkewMs).toUTCString() };
  };

  const readBody = (req: IncomingMessage): Promise<string> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_BODY_BYTES) reject(new ServiceError(413, 'invalid_request', 'リクエストボディが大きすぎます。'));
        else chunks.push(chunk);
      });
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });

  const parseJson = (text: string): unknown => {
    if (text.trim() === '') return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw invalidRequest('リクエストボディが正しい JSON ではありません。');
    }
  };

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  /** A fault instead of the handler: nothing behind it runs, so nothing is mutated or counted. */
  const injectFault = (kind: FaultKind, req: IncomingMessage, res: ServerResponse, token: string | null): void => {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    stats.fault(kind);
    switch (kind) {
      case 'timeout':
        // Held until the client gives up (its socket closes) or close() destroys every connection.
        stats.record(method, path, token, 'none');
        return;
      case 'reset':
        stats.record(method, path, token, 'none');
        req.socket.destroy();
        return;
      case 'malformed': {
        stats.record(method, path, token, 200);
        const text = '{"results":[{"id":"';
        res.writeHead(200, { ...dateHeader(res), 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(text) });
        res.end(text);
        return;
      }
      case 'html': {
        stats.record(method, path, token, 502);
        const html =
          '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n';
        res.writeHead(502, { ...dateHeader(res), 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(html) });
        res.end(html);
        return;
      }
      case 'rateLimit':
      case 'rateLimit503': {
        const status = kind === 'rateLimit' ? 429 : 503;
        stats.record(method, path, token, status);
        const { retryAfterSeconds, remaining, resetSeconds } = faults.spuriousRateLimit();
        // The reset is on the service's clock, the one the Date header shows.
        const serverNow = nowMs() + knobs.clock.dateSkewMs;
        sendJson(
          res,
          status,
          { error: { code: 'rate_limited', message: MESSAGES.rate_limited } },
          {
            ...dateHeader(res),
            'Retry-After': String(retryAfterSeconds),
            'X-RateLimit-Limit': String(limiter.perKeyLimit),
            'X-RateLimit-Remaining': String(remaining),
            'X-RateLimit-Reset': String(Math.ceil(serverNow / 1000) + resetSeconds),
          },
        );
        return;
      }
      case 'forbidden':
        // What the spec's 403 looks like: no role of the spec denies a read, so only a fault can stand for it.
        stats.record(method, path, token, 403);
        sendJson(res, 403, { error: { code: 'forbidden', message: MESSAGES.forbidden } }, dateHeader(res));
        return;
      case 'notFound':
        stats.record(method, path, token, 404);
        sendJson(res, 404, { error: { code: 'not_found', message: MESSAGES.not_found } }, dateHeader(res));
        return;
      case 'gateway404': {
        stats.record(method, path, token, 404);
        const html = '<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>';
        res.writeHead(404, { ...dateHeader(res), 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(html) });
        res.end(html);
        return;
      }
      case 'error200':
        stats.record(method, path, token, 200);
        sendJson(res, 200, { error: { code: 'internal_error', message: MESSAGES.internal_error } }, dateHeader(res));
        return;
      default: {
        const status = faults.errorStatus(kind);
        stats.record(method, path, token, status);
        sendJson(res, status, { error: { code: 'internal_error', message: MESSAGES.internal_error } }, dateHeader(res));
      }
    }
  };

  /**
   * A public request. Latency is what a client measures: the answer leaves `latencyMs` after the request
   * arrived, the service's own work included (it is handled at once, then held for the rest). Faults wait out
   * the latency before they strike.
   */
  const handlePublic = async (req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams): Promise<void> => {
    const arrived = performance.now();
    const method = req.method ?? 'GET';
    const token = bearerToken(req.headers.authorization);
    const decision = faults.decide(path);
    if (decision.kind) {
      if (decision.delayMs > 0) await sleep(decision.delayMs);
      if (!closing) injectFault(decision.kind, req, res, token);
      return;
    }

    let headers: Record<string, string> = limiter.idleHeaders(nowMs(), knobs.clock.dateSkewMs);
    let answer: { status: number; body: unknown };
    let afterBuilt: (() => void) | undefined;
    try {
      const rawBody = await readBody(req);
      const role = token === null ? undefined : keys.roleOf(token);
      if (token === null || role === undefined) throw new ServiceError(401, 'unauthorized');
      const rate = limiter.take(token, nowMs(), knobs.clock.dateSkewMs);
      headers = rate.headers;
      if (!rate.allowed) {
        headers = { ...headers, 'Retry-After': String(rate.retryAfter) };
        stats.rateLimited();
        throw new ServiceError(429, 'rate_limited');
      }
      const route = api.route(method, path);
      if (!roleAllows(role, route.role)) throw new ServiceError(403, 'forbidden');
      let parsed: { value: unknown } | null = null;
      const response = route.run({
        method,
        path,
        query,
        origin: req.headers.host ? `http://${req.headers.host}` : url,
        key: token,
        body: () => (parsed ??= { value: parseJson(rawBody) }).value,
      });
      if (response.headers) headers = { ...headers, ...response.headers };
      answer = { status: response.status, body: response.body };
      afterBuilt = response.afterBuilt;
    } catch (error) {
      if (error instanceof ServiceError) {
        if (error.headers) headers = { ...headers, ...error.headers };
        answer = { status: error.status, body: error.envelope() };
      } else {
        answer = { status: 500, body: { error: { code: 'internal_error', message: MESSAGES.internal_error } } };
        // Surface simulator bugs loudly in test output.
        console.error('[simulator] unexpected error', error);
      }
    }
    // Serialized and encoded before the hold: turning a page into bytes is the service's work, inside its latency.
    let bytes = jsonBytes(answer.body, indent);
    // The onListPage hook runs on a body already serialized, so what it changes shows from the next request on.
    try {
      afterBuilt?.();
    } catch (error) {
      console.error('[simulator] onListPage hook failed', error);
      answer = { status: 500, body: { error: { code: 'internal_error', message: MESSAGES.internal_error } } };
      bytes = jsonBytes(answer.body, indent);
    }
    const remaining = decision.delayMs - (performance.now() - arrived);
    if (remaining > 0) await sleep(remaining);
    if (closing) return;
    stats.record(method, path, token, answer.status);
    sendJsonBytes(res, answer.status, bytes, { ...headers, ...dateHeader(res) });
  };

  const handleAdminHttp = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    try {
      const body = parseJson(await readBody(req));
      const result = handleAdmin(routes, req.method ?? 'GET', path, body);
      sendJson(res, result.status, result.body);
    } catch (error) {
      if (error instanceof ServiceError) sendJson(res, error.status, error.envelope());
      else sendJson(res, 400, { error: { code: 'invalid_request', message: (error as Error).message } });
    }
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const parsedUrl = new URL(req.url ?? '/', 'http://sim');
    const path = parsedUrl.pathname;
    const work =
      path === '/_admin' || path.startsWith('/_admin/')
        ? handleAdminHttp(req, res, path)
        : handlePublic(req, res, path, parsedUrl.searchParams);
    work.catch((error: unknown) => {
      console.error('[simulator] request failed', error);
      if (!res.headersSent) res.destroy();
    });
  };

  const simulator: Simulator = {
    get url() {
      return url;
    },
    admin,
    listen(port = 0, host = '127.0.0.1') {
      if (server) return Promise.reject(new Error('simulator already listening'));
      const srv = createServer({ keepAliveTimeout: 5_000 }, onRequest);
      server = srv;
      closing = false;
      return new Promise((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(port, host, () => {
          srv.off('error', reject);
          const address = srv.address() as AddressInfo;
          const shownHost = address.family === 'IPv6' || host.includes(':') ? `[${address.address}]` : host;
          url = `http://${shownHost}:${address.port}`;
          resolve({ url, port: address.port });
        });
      });
    },
    close() {
      const srv = server;
      if (!srv) return Promise.resolve();
      closing = true;
      server = null;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      return new Promise((resolve) => {
        srv.close(() => resolve());
        // Keep-alive sockets and held (timeout-fault) requests would otherwise keep close() waiting.
        srv.closeAllConnections();
      });
    },
  };
  return simulator;
}
