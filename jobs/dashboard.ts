import type { Server } from 'node:http';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import express from 'express';
import type { Registry } from 'prom-client';

/** A listening HTTP server and how to stop it. */
export interface Served {
  port: number;
  close(): Promise<void>;
}

async function listen(app: express.Express, port: number, host: string): Promise<Served> {
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(port, host, (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** bull-board at `/`: queued, active, delayed and failed jobs, their progress and logs. */
export async function serveDashboard(queue: Queue, port: number, host = '0.0.0.0'): Promise<Served> {
  const adapter = new ExpressAdapter();
  adapter.setBasePath('/');
  createBullBoard({ queues: [new BullMQAdapter(queue)], serverAdapter: adapter });
  const app = express();
  app.use('/', adapter.getRouter());
  return listen(app, port, host);
}

/** Prometheus text format at `/metrics`, from the worker's own registry. */
export async function serveMetrics(registry: Registry, port: number, host = '0.0.0.0'): Promise<Served> {
  const app = express();
  app.get('/metrics', async (_req, res) => {
    res.set('Content-Type', registry.contentType);
    res.send(await registry.metrics());
  });
  return listen(app, port, host);
}
