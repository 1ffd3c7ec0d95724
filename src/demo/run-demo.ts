import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { ConfigError } from '../core/errors.js';
import { DEMO_WAREHOUSE_PATH } from '../core/paths.js';
import { createSimulator, DEFAULT_KEYS, type Simulator } from '../simulator/index.js';
import { createSyncEnvironment, primaryFailure, runSync, type ProgressSink, type SyncReport } from '../sync/index.js';
import { makeDirectories, writerPathFor } from '../warehouse/index.js';
import { formatCount, formatNumber } from '../cli/format.js';

/** Beside a warehouse the demo built: a file it may rebuild. */
export const demoMarkerPath = (warehousePath: string): string => `${warehousePath}.demo`;

/**
 * The demo deletes and rebuilds its file: it refuses a file it did not build (a real warehouse given by `-w`
 * would be lost). Its own default path it always rebuilds (files built before the marker existed have none).
 */
export function checkDemoTarget(warehousePath: string): void {
  if (!existsSync(warehousePath) || existsSync(demoMarkerPath(warehousePath))) return;
  if (resolve(warehousePath) === resolve(DEMO_WAREHOUSE_PATH)) return;
  throw new ConfigError(
    'demo_would_overwrite',
    `the demo rebuilds its warehouse from scratch, and ${warehousePath} exists and was not built by the demo: ` +
      `nothing was touched. Run the demo without -w (it uses ${DEMO_WAREHOUSE_PATH}), or give it a path that does not exist.`,
    { warehousePath },
  );
}

/** Big enough to page through every resource, small enough to finish in seconds at 1000 requests/min. */
export const DEMO_SIZE = { deals: 600, companies: 200, contacts: 800, meetingLogs: 120, contactActivities: 400, users: 12 };

/**
 * The query the demo ends with: the pipeline by stage, through the analyst view, so stages show as their labels
 * and columns by their display names (the simulator's organization names them in Japanese).
 */
export const DEMO_QUERY = `SELECT "フェーズ" AS stage, count(*) AS deals, round(sum("金額")) AS pipeline
FROM deals_view
GROUP BY 1
ORDER BY pipeline DESC`;

/** Records of a resource (or a size key such as `meetingLogs`), counted: `1 company`, `1,300 contacts`. */
function records(n: number, resource: string): string {
  const words = resource
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/-/g, ' ')
    .toLowerCase();
  const singular = words.replace(/ies$/, 'y').replace(/s$/, '');
  return formatCount(n, singular, words);
}

const KIND_LABELS: Record<string, string> = {
  update: 'values changed',
  'same-value': 'same values written again',
  create: 'records created',
  activity: 'activities recorded (the parent record moves too)',
};

export interface DemoOutput {
  heading(text: string): void;
  line(text: string): void;
  report(report: SyncReport): void;
  rows(rows: Record<string, unknown>[]): void;
}

export interface DemoOptions {
  config: Config;
  logger: Logger;
  output: DemoOutput;
  progress?: ProgressSink;
  signal?: AbortSignal;
}

export interface DemoResult {
  first: SyncReport;
  second: SyncReport;
  counts: Record<string, number>;
}

/**
 * The whole product in one go, on embedded defaults: the simulator on a free port (at the service's real
 * rate limit), a full sync into a fresh DuckDB file, a round of changes in the service, an incremental sync
 * that fetches only those, and a query.
 */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const { output } = options;
  checkDemoTarget(options.config.warehousePath);
  const simulator: Simulator = createSimulator({ seed: 1, size: DEMO_SIZE });
  const { url } = await simulator.listen(0);
  try {
    // The demo rebuilds its files: the published one and the writer's own, with their WALs.
    for (const file of [options.config.warehousePath, writerPathFor(options.config.warehousePath)]) {
      await rm(file, { force: true });
      await rm(`${file}.wal`, { force: true });
    }
    await makeDirectories(dirname(options.config.warehousePath), 0o755);
    await writeFile(demoMarkerPath(options.config.warehousePath), 'built by `salesync demo`, which rebuilds this warehouse\n');
    const config: Config = { ...options.config, baseUrl: url, apiKey: DEFAULT_KEYS.read };
    output.heading('salesync demo');
    output.line(
      `simulator  ${url}  (${Object.entries(DEMO_SIZE)
        .map(([k, v]) => records(v, k))
        .join(', ')})`,
    );
    output.line(
      `limits     ${formatNumber(config.perKeyPerMinute)} requests/min per key, ${formatNumber(config.perOrgPerMinute)}/min per organization`,
    );
    output.line(`warehouse  ${config.warehousePath} (rebuilt)`);

    const sync = async (mode: 'full' | 'incremental') => {
      const env = createSyncEnvironment(config, {
        logger: options.logger,
        ...(options.progress ? { progress: options.progress } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      const report = await runSync(env.deps, env.settings, {
        resources: ['users', 'companies', 'contacts', 'deals', 'meeting-logs', 'contact-activities'],
        mode,
        concurrency: config.resourceConcurrency,
      }).finally(() => env.close());
      const failure = primaryFailure(report);
      if (failure?.error) throw failure.error;
      return { report, warehouse: env.warehouse };
    };

    output.heading('1. First sync: every record, every property as a typed column');
    const first = await sync('incremental');
    output.report(first.report);

    output.heading('2. Changes in the service');
    const changes = simulator.admin.mutateRandom(60, 7, ['update', 'same-value', 'create', 'activity']);
    const tally = new Map<string, Map<string, number>>();
    for (const change of changes) {
      const byResource = tally.get(change.kind) ?? new Map<string, number>();
      byResource.set(change.resource, (byResource.get(change.resource) ?? 0) + 1);
      tally.set(change.kind, byResource);
    }
    for (const [kind, byResource] of tally) {
      output.line(`${KIND_LABELS[kind] ?? kind}: ${[...byResource].map(([resource, n]) => records(n, resource)).join(', ')}`);
    }
    output.line(`Same-value writes do not move updated_at, so the next sync neither sees nor fetches them.`);

    output.heading('3. Incremental sync: only what changed since the watermark');
    const second = await sync('incremental');
    output.report(second.report);

    output.heading('4. The warehouse');
    const counts = await second.warehouse.tableCounts();
    output.rows(Object.entries(counts).map(([table, rows]) => ({ table, rows })));
    output.line(
      `requests used: ${formatNumber(first.report.requests)} for the first sync, ${formatNumber(second.report.requests)} for the incremental one`,
    );

    output.heading('5. An example query');
    output.line(DEMO_QUERY);
    output.rows(await second.warehouse.query(DEMO_QUERY));
    output.line('');
    output.line(`Query it yourself:  npx salesync --warehouse ${config.warehousePath} query "SELECT count(*) FROM contacts"`);
    output.line(`or from DuckDB:     duckdb -readonly ${config.warehousePath}`);
    return { first: first.report, second: second.report, counts };
  } finally {
    await simulator.close();
  }
}
