import { createHash, timingSafeEqual } from 'node:crypto';
import type { Server } from 'node:http';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import express from 'express';
import type { Registry } from 'prom-client';
import { ConfigError, shown } from '../src/core/errors.js';

/** A listening HTTP server and how to stop it. */
export interface Served {
  port: number;
  /** The address it is bound to (127.0.0.1 unless a host was asked for). */
  host: string;
  close(): Promise<void>;
}

/** Which setting chose a server's port and host: named by the error when it cannot listen. */
export interface ListenSettings {
  /** What listens, for the message: `bull-board`, `metrics`. */
  what: string;
  port: number;
  /** @defaultValue 127.0.0.1: this host only */
  host?: string;
  portFlag: string;
  portEnv: string;
  hostFlag: string;
  hostEnv: string;
}

/** Loopback unless the operator chooses otherwise: a dashboard that edits jobs is never open to a network by accident. */
export const DEFAULT_HOST = '127.0.0.1';

/** The listen error as the operator's mistake it is: the port in use or forbidden, the address not of this host. */
export function listenFailure(error: unknown, settings: ListenSettings): Error {
  const code = (error as { code?: unknown } | null)?.code;
  const host = settings.host ?? DEFAULT_HOST;
  const change = `choose another with ${settings.portFlag} or ${settings.portEnv} (0 disables it)`;
  if (code === 'EADDRINUSE') {
    return new ConfigError(
      'port_in_use',
      `port ${settings.port} on ${host} is already in use, so ${settings.what} cannot listen: ${change}`,
      {
        port: settings.port,
        option: settings.portFlag,
      },
    );
  }
  if (code === 'EACCES') {
    return new ConfigError(
      'port_forbidden',
      `${settings.what} may not listen on port ${settings.port} (below 1024 needs privileges): ${change}`,
      {
        port: settings.port,
        option: settings.portFlag,
      },
    );
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new ConfigError(
      'invalid_host',
      `${settings.what} cannot listen on ${shown(host)}: not an address of this machine; set ${settings.hostFlag} or ${settings.hostEnv} to one (127.0.0.1, or 0.0.0.0 for every interface)`,
      { host, option: settings.hostFlag },
    );
  }
  if (code === 'ERR_SOCKET_BAD_PORT') {
    return new ConfigError(
      'invalid_option',
      `${settings.portFlag} / ${settings.portEnv} must be a port number from 0 to 65535 (got ${settings.port})`,
      {
        option: settings.portFlag,
      },
    );
  }
  return error instanceof Error ? error : new Error(String(error));
}

async function listen(app: express.Express, settings: ListenSettings): Promise<Served> {
  const host = settings.host ?? DEFAULT_HOST;
  const server: Server = await new Promise((resolve, reject) => {
    try {
      const s = app.listen(settings.port, host, (error?: Error) => (error ? reject(listenFailure(error, settings)) : resolve(s)));
      s.once('error', (error) => reject(listenFailure(error, settings)));
    } catch (error) {
      reject(listenFailure(error, settings));
    }
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : settings.port,
    host: typeof address === 'object' && address ? address.address : host,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** HTTP basic auth credentials for the dashboard. */
export interface BasicAuth {
  user: string;
  password: string;
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/**
 * Basic auth in constant time: both sides are hashed to the same length first, so neither the comparison's
 * duration nor an early length check tells an attacker how much of a guess was right.
 */
export function basicAuthMiddleware(auth: BasicAuth): express.RequestHandler {
  const expected = digest(`${auth.user}:${auth.password}`);
  return (req, res, next) => {
    const header = req.headers.authorization ?? '';
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    const given = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
    if (match && timingSafeEqual(digest(given), expected)) return next();
    res.set('WWW-Authenticate', 'Basic realm="salesync", charset="UTF-8"');
    res.status(401).send('authentication required');
  };
}

export interface DashboardOptions extends Omit<ListenSettings, 'what' | 'portFlag' | 'portEnv' | 'hostFlag' | 'hostEnv'> {
  /** Let the dashboard retry, delete and edit jobs (SALESYNC_DASHBOARD_WRITE). @defaultValue false: read-only */
  write?: boolean;
  /** Ask for these credentials (SALESYNC_DASHBOARD_USER / _PASSWORD). @defaultValue none */
  auth?: BasicAuth | null;
}

/**
 * bull-board at `/`: queued, active, delayed and failed jobs, their progress and logs. Read-only unless `write`
 * (its API then answers 405 to a retry, a deletion or an edit), on 127.0.0.1 unless a host is given.
 */
export async function serveDashboard(queue: Queue, options: DashboardOptions): Promise<Served> {
  const adapter = new ExpressAdapter();
  adapter.setBasePath('/');
  createBullBoard({ queues: [new BullMQAdapter(queue, { readOnlyMode: options.write !== true })], serverAdapter: adapter });
  const app = express();
  app.disable('x-powered-by');
  if (options.auth) app.use(basicAuthMiddleware(options.auth));
  app.use('/', adapter.getRouter());
  return listen(app, {
    ...options,
    what: 'bull-board',
    portFlag: '--dashboard-port',
    portEnv: 'SALESYNC_DASHBOARD_PORT',
    hostFlag: '--dashboard-host',
    hostEnv: 'SALESYNC_DASHBOARD_HOST',
  });
}

/** Prometheus text format at `/metrics`, from the worker's own registry, on 127.0.0.1 unless a host is given. */
export async function serveMetrics(registry: Registry, options: { port: number; host?: string }): Promise<Served> {
  const app = express();
  app.disable('x-powered-by');
  app.get('/metrics', async (_req, res) => {
    res.set('Content-Type', registry.contentType);
    res.send(await registry.metrics());
  });
  return listen(app, {
    ...options,
    what: 'the metrics server',
    portFlag: '--metrics-port',
    portEnv: 'SALESYNC_METRICS_PORT',
    hostFlag: '--metrics-host',
    hostEnv: 'SALESYNC_METRICS_HOST',
  });
}
