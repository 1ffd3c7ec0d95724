#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import type { Config } from '../config.js';
import { ConfigError } from '../core/errors.js';
import { projectRoot } from '../core/paths.js';
import { RESOURCE_NAMES } from '../core/resources.js';
import { parseDurationMs } from '../core/time.js';
import { createRuntime, failureLine, type CliRuntime } from './runtime.js';

// Each command's module loads when that command runs, with what it pulls in (DuckDB, BullMQ, the dashboard's
// express): `salesync --help` or a cron `sync` without Redis never pays for the worker's dependencies.
const commands = {
  sync: () => import('./commands/sync.js'),
  reconcile: () => import('./commands/reconcile.js'),
  summaries: () => import('./commands/summaries.js'),
  backfill: () => import('./commands/backfill.js'),
  worker: () => import('./commands/worker.js'),
  schedule: () => import('./commands/schedule.js'),
  status: () => import('./commands/status.js'),
  query: () => import('./commands/query.js'),
  export: () => import('./commands/export.js'),
  demo: () => import('./commands/demo.js'),
  simulator: () => import('./commands/simulator.js'),
};

const version = (JSON.parse(readFileSync(join(projectRoot(import.meta.url), 'package.json'), 'utf8')) as { version: string }).version;

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number of at least 1');
  return n;
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('must be a port number (0 disables)');
  return n;
}

function duration(value: string): number {
  const ms = parseDurationMs(value);
  if (ms === null || ms < 1) throw new InvalidArgumentError('must be a duration such as 90s, 15m or 1h');
  return ms;
}

interface GlobalFlags {
  warehouse?: string;
  baseUrl?: string;
  logLevel?: string;
  progress?: boolean;
}

/** Run a command with a runtime built from the environment and flags; failures become one line on stderr. */
async function run(
  program: Command,
  overrides: Partial<Config>,
  body: (runtime: CliRuntime) => Promise<unknown>,
  options: { quiet?: boolean; stopIsSuccess?: boolean } = {},
): Promise<void> {
  const flags = program.opts<GlobalFlags>();
  let runtime: CliRuntime | undefined;
  try {
    runtime = createRuntime({
      env: process.env,
      overrides: {
        ...(flags.warehouse ? { warehousePath: flags.warehouse } : {}),
        ...(flags.baseUrl ? { baseUrl: flags.baseUrl } : {}),
        ...(flags.logLevel ? { logLevel: flags.logLevel } : {}),
        ...overrides,
      },
      stdout: process.stdout,
      stderr: process.stderr,
      ...(flags.progress === false ? { progress: false } : {}),
      ...(options.quiet ? { quiet: true } : {}),
    });
    await body(runtime);
    runtime.close();
    // A worker is meant to run until told to stop: SIGTERM is its normal end.
    if (runtime.signal.aborted && !options.stopIsSuccess) process.exitCode = 130;
  } catch (error) {
    runtime?.close();
    process.stderr.write(`${failureLine(error)}\n`);
    process.exitCode = error instanceof ConfigError ? 2 : runtime?.signal.aborted ? 130 : 1;
  }
}

export function buildProgram(): Command {
  const program = new Command('salesync')
    .description('Keep a DuckDB file an exact, fresh mirror of a Sales Records Service organization.')
    .version(version)
    .option('-w, --warehouse <path>', 'DuckDB file (env WAREHOUSE_PATH, default ./data/warehouse.duckdb)')
    .option('--base-url <url>', 'service address (env SALES_API_BASE_URL)')
    .option('--log-level <level>', 'trace, debug, info, warn, error (env LOG_LEVEL, default info)')
    .option('--no-progress', 'never draw the live progress display, even on a terminal')
    .showHelpAfterError();

  program
    .command('sync')
    .description(`walk resources into the warehouse: incremental from each watermark, resuming interrupted walks`)
    .argument('[resource...]', `any of: ${RESOURCE_NAMES.join(' ')} (default: all)`)
    .option('--full', 'walk every record, ignoring the watermarks (a later reconcile also detects deletions)')
    .option('--concurrency <n>', 'resources walked at once (env SALESYNC_CONCURRENCY, default 3)', positiveInt)
    .action(async (resources: string[], options: { full?: boolean; concurrency?: number }) =>
      run(program, options.concurrency ? { resourceConcurrency: options.concurrency } : {}, async (rt) =>
        (await commands.sync()).syncCommand(rt, resources, options),
      ),
    );

  program
    .command('reconcile')
    .description('sweep every record: write what incremental walks cannot see (links, predictions), mark deleted records')
    .argument('[resource...]', `any of: ${RESOURCE_NAMES.join(' ')} (default: all)`)
    .option('--deep', "meeting logs: re-fetch every log's single view, catching summaries changed on any log (one request per log)")
    .option('--concurrency <n>', 'resources swept at once (env SALESYNC_CONCURRENCY, default 3)', positiveInt)
    .action(async (resources: string[], options: { deep?: boolean; concurrency?: number }) =>
      run(program, options.concurrency ? { resourceConcurrency: options.concurrency } : {}, async (rt) =>
        (await commands.reconcile()).reconcileCommand(rt, resources, options),
      ),
    );

  program
    .command('summaries')
    .description('re-fetch recent meeting logs whose summaries are empty or not final (env SALESYNC_SUMMARIES_WINDOW)')
    .action(async () => run(program, {}, async (rt) => (await commands.summaries()).summariesCommand(rt)));

  program
    .command('backfill')
    .description('replay one resource from --since (default: everything) without moving its watermark: queued for the workers, or here with --wait')
    .argument('<resource>', `a record resource: ${RESOURCE_NAMES.filter((r) => r !== 'users').join(' ')}`)
    .option('--since <iso>', 'records updated at or after this instant (default: all)')
    .option('--until <iso>', 'the end of the window you care about (records updated later are true data and are written too)')
    .option('--wait', 'run it here, in the foreground, with a progress line, instead of queueing a job')
    .action(async (resource: string, options: { since?: string; until?: string; wait?: boolean }) =>
      run(program, {}, async (rt) => (await commands.backfill()).backfillCommand(rt, resource, options)),
    );

  program
    .command('worker')
    .description('run scheduled and queued jobs from Redis (REDIS_URL) until SIGTERM; serves bull-board and Prometheus metrics')
    .option('--concurrency <n>', 'jobs run at once (env SALESYNC_WORKER_CONCURRENCY, default 3)', positiveInt)
    .option('--dashboard-port <port>', 'bull-board port, 0 disables (env SALESYNC_DASHBOARD_PORT, default 3000)', port)
    .option('--metrics-port <port>', 'Prometheus /metrics port, 0 disables (env SALESYNC_METRICS_PORT, default 9464)', port)
    .action(async (options: { concurrency?: number; dashboardPort?: number; metricsPort?: number }) =>
      run(
        program,
        {
          ...(options.concurrency ? { workerConcurrency: options.concurrency } : {}),
          ...(options.dashboardPort !== undefined ? { dashboardPort: options.dashboardPort } : {}),
          ...(options.metricsPort !== undefined ? { metricsPort: options.metricsPort } : {}),
        },
        async (rt) => (await commands.worker()).workerCommand(rt),
        { stopIsSuccess: true },
      ),
    );

  program
    .command('schedule')
    .description('register the Job Schedulers in Redis (idempotent): syncs every 15m, users hourly, reconcile nightly, summaries hourly')
    .option('--list', 'show the registered schedules and change nothing')
    .option('--remove', "remove salesync's schedules (jobs already queued still run)")
    .option('--sync-every <duration>', 'incremental sync of each record resource (env SALESYNC_SYNC_EVERY, default 15m)', duration)
    .option('--users-every <duration>', 'users refresh (env SALESYNC_USERS_EVERY, default 1h)', duration)
    .option('--summaries-every <duration>', 'summaries job (env SALESYNC_SUMMARIES_EVERY, default 1h)', duration)
    .option('--reconcile-cron <pattern>', 'reconcile sweep (env SALESYNC_RECONCILE_CRON, default "0 3 * * *")')
    .option('--timezone <tz>', 'time zone of the cron pattern (env SALESYNC_TIMEZONE, default UTC)')
    .option('--json', 'print JSON instead of a table')
    .action(
      async (options: {
        list?: boolean;
        remove?: boolean;
        syncEvery?: number;
        usersEvery?: number;
        summariesEvery?: number;
        reconcileCron?: string;
        timezone?: string;
        json?: boolean;
      }) =>
        run(
          program,
          {
            ...(options.syncEvery ? { syncEveryMs: options.syncEvery } : {}),
            ...(options.usersEvery ? { usersEveryMs: options.usersEvery } : {}),
            ...(options.summariesEvery ? { summariesEveryMs: options.summariesEvery } : {}),
            ...(options.reconcileCron ? { reconcileCron: options.reconcileCron } : {}),
            ...(options.timezone ? { timezone: options.timezone } : {}),
          },
          async (rt) => (await commands.schedule()).scheduleCommand(rt, options),
        ),
    );

  program
    .command('status')
    .description('per resource: rows, watermark, freshness and the last run')
    .option('--json', 'print JSON instead of a table')
    .action(async (options: { json?: boolean }) => run(program, {}, async (rt) => (await commands.status()).statusCommand(rt, options)));

  program
    .command('query')
    .description('run one read-only SQL query against the warehouse and print the rows')
    .argument('<sql>', 'e.g. "SELECT stage, count(*) FROM deals GROUP BY stage"')
    .option('--json', 'print JSON instead of a table')
    .action(async (sql: string, options: { json?: boolean }) => run(program, {}, async (rt) => (await commands.query()).queryCommand(rt, sql, options)));

  program
    .command('export')
    .description('write every table and view of the warehouse as files (read-only), e.g. for pandas, Polars or Spark')
    .requiredOption('--out <dir>', 'directory to write into (created when missing; files of the same name are replaced)')
    .option('--format <format>', 'file format: parquet', 'parquet')
    .option('--json', 'print JSON instead of a table')
    .action(async (options: { out: string; format: string; json?: boolean }) => run(program, {}, async (rt) => (await commands.export()).exportCommand(rt, options)));

  program
    .command('demo')
    .description('start the simulator, sync it into ./data/demo.duckdb, change records, sync again, and show the result')
    .action(async () =>
      // The demo deletes and rebuilds its file: never let WAREHOUSE_PATH point it at a real warehouse.
      run(program, { warehousePath: program.opts<GlobalFlags>().warehouse ?? './data/demo.duckdb' }, async (rt) => (await commands.demo()).demoCommand(rt), {
        quiet: true,
      }),
    );

  program
    .command('simulator')
    .description('run the Sales Records Service simulator (for trying salesync without the real service)')
    .option('-p, --port <port>', 'port to listen on', (v) => Number(v), 4010)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--seed <n>', 'seed of the generated data', positiveInt, 1)
    .option('--scale <n>', 'multiply the default data size by n', (v) => Number(v), 1)
    .option('--rate-limit <n>', 'requests per minute per key', positiveInt, 1000)
    .action(async (options: { port: number; host: string; seed: number; scale: number; rateLimit: number }) =>
      run(program, {}, async (rt) => (await commands.simulator()).simulatorCommand(rt, options)),
    );

  return program;
}

await buildProgram().parseAsync(process.argv);
