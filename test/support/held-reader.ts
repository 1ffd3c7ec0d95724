import { statSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { expect } from 'vitest';
import { holdDuckDb, type DuckDbHolder } from './duckdb-holder.js';
import type { Harness } from './harness.js';

export interface HeldReaderOutcome {
  ok: boolean;
  /** Opens of WAREHOUSE_PATH that DuckDB refused. */
  refused: number;
  opens: number;
  /** Inodes of WAREHOUSE_PATH seen by the opener: each publish is a new one. */
  copies: number;
}

/**
 * A notebook holds WAREHOUSE_PATH read-only for a whole full sync (publishing every 100 ms), while a dashboard
 * opens it every 100 ms; asserts that the held reader kept answering from the copy it opened. The caller closes
 * `holder`.
 */
export async function syncUnderHeldReaders(h: Harness, holders: DuckDbHolder[]): Promise<HeldReaderOutcome> {
  const held = await holdDuckDb(h.config.warehousePath);
  holders.push(held);
  let refused = 0;
  let opens = 0;
  const copiesSeen = new Set<number>();
  const heldCounts: number[] = [];
  let running = true;
  const opener = (async () => {
    while (running) {
      try {
        copiesSeen.add(statSync(h.config.warehousePath).ino);
        const instance = await DuckDBInstance.create(h.config.warehousePath, { access_mode: 'READ_ONLY' });
        const connection = await instance.connect();
        await connection.runAndReadAll('SELECT count(*) FROM deals');
        connection.closeSync();
        instance.closeSync();
        opens += 1;
      } catch {
        refused += 1;
      }
      heldCounts.push(await held.countDeals());
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const report = await h.sync({ mode: 'full', config: { publishEveryMs: 100 } }).finally(() => (running = false));
  await opener;
  expect(heldCounts.every((n) => n === held.dealsAtOpen)).toBe(true);
  expect(await held.countDeals()).toBe(held.dealsAtOpen);
  return { ok: report.ok, refused, opens, copies: copiesSeen.size };
}
