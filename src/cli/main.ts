#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import type { Config } from '../config.js';
import { flagHelp } from '../settings.js';
import { SalesyncError } from '../core/errors.js';
import { DEMO_WAREHOUSE_PATH, projectRoot } from '../core/paths.js';
import { RECORD_RESOURCE_NAMES, RESOURCE_NAMES } from '../core/resources.js';
import { explainRedisError } from '../redis/connection.js';
import { duckdbAllocatorConf } from '../warehouse/allocator-conf.js';
import { limitHeapGrowth } from '../heap-growth.js';
import { CHECK_FAILED, EXIT_UNHEALTHY, parseMaxAge, type MaxAges } from './health-check.js';
import { duration, listenHost, logLevel, maxAge, port, positiveInt, positiveNumber, usageFailure } from './option-parsers.js';
import type { ScheduleFlags } from './commands/schedule.js';
import { exitCodeFor } from './outcome.js';
import { reportRun } from './run-report.js';
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
  changes: () => import('./commands/changes.js'),
  dbtSources: () => import('./commands/dbt-sources.js'),
  demo: () => import('./commands/demo.js'),
  simulator: () => import('./commands/simulator.js'),
};

const version = (JSON.parse(readFileSync(join(projectRoot(import.meta.url), 'package.json'), 'utf8')) as { version: string }).version;

interface GlobalFlags {
  warehouse?: string;
  baseUrl?: string;
  logLevel?: string;
  progress?: boolean;
}

interface RunOptions {
  quiet?: boolean;
  /** stdout carries the command's data: logs go to stderr. */
  dataOnStdout?: boolean;
  stopIsSuccess?: boolean;
  /** Write SALESYNC_METRICS_TEXTFILE after the run (sync, reconcile, backfill, summaries). */
  textfile?: boolean;
  /** POST SALESYNC_ALERT_URL when the run fails (the commands run unattended). */
  alert?: boolean;
  /** After the first SIGINT/SIGTERM, how long the command may take to stop (see createRuntime). */
  stopGraceMs?: number;
}

/** A worker's walks get its 30 s close timeout to commit on SIGTERM, and a margin; compose allows it 45 s. */
const WORKER_STOP_GRACE_MS = 40_000;

/** The documented exit code: 4 for `status --check` problems, else outcome.ts's (2 configuration, 3 quarantine, 130, 1). */
function exitCode(error: unknown, interrupted: boolean): number {
  if (error instanceof SalesyncError && error.code === CHECK_FAILED) return EXIT_UNHEALTHY;
  return exitCodeFor(error, interrupted);
}

/**
 * Run a command with a runtime built from the environment and flags; failures become one line on stderr. Then,
 * as asked, the metrics textfile and the alert webhook, which never change the exit code.
 */
async function run(
  program: Command,
  command: string,
  overrides: Partial<Config>,
  body: (runtime: CliRuntime) => Promise<unknown>,
  options: RunOptions = {},
): Promise<void> {
  const flags = program.opts<GlobalFlags>();
  const startedAt = Date.now();
  let runtime: CliRuntime | undefined;
  let failure: unknown = null;
  // Before the command loads DuckDB, whose allocator reads this once.
  process.env.DUCKDB_JE_MALLOC_CONF = duckdbAllocatorConf(process.env.DUCKDB_JE_MALLOC_CONF);
  limitHeapGrowth();
  try {
    runtime = await createRuntime({
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
      ...(options.dataOnStdout ? { logsToStderr: true } : {}),
      ...(options.stopGraceMs ? { stopGraceMs: options.stopGraceMs } : {}),
    });
    await body(runtime);
    runtime.close();
    // A worker is meant to run until told to stop: SIGTERM is its normal end. Anything else stopped says so in a
    // line, as every other non-zero exit does (the signal's reason: what was committed, and that a rerun resumes).
    if (runtime.signal.aborted && !options.stopIsSuccess) {
      process.stderr.write(`${failureLine(runtime.signal.reason)}\n`);
      process.exitCode = 130;
    }
  } catch (error) {
    runtime?.close();
    // A raw ioredis or BullMQ error from a connection that gave up: say it is Redis, and where.
    failure = (runtime?.config.redisUrl ? explainRedisError(error, runtime.config.redisUrl) : null) ?? error;
    process.stderr.write(`${failureLine(failure)}\n`);
    process.exitCode = exitCode(failure, runtime?.signal.aborted === true);
  }
  if (runtime && (options.textfile || options.alert)) {
    await reportRun(
      runtime,
      { command, startedAt, exitCode: Number(process.exitCode ?? 0), error: failure },
      { textfile: options.textfile === true, alert: options.alert === true },
    );
  }
}

/** `--max-age` values folded over SALESYNC_MAX_AGE. */
function maxAges(config: Config, values: readonly string[]): MaxAges {
  return values.reduce<MaxAges>((ages, value) => parseMaxAge(value, ages), { default: config.maxAgeMs, perResource: {} });
}

export function buildProgram(): Command {
  const program = new Command('salesync')
    .description('Keep a DuckDB file an exact, fresh mirror of a Sales Records Service organization.')
    .version(version)
    .option('-w, --warehouse <path>', flagHelp('warehousePath', 'the DuckDB file'))
    .option('--base-url <url>', flagHelp('baseUrl', 'the service address'))
    .option('--log-level <level>', flagHelp('logLevel'), logLevel)
    .option('--no-progress', 'never draw the live progress display, even on a terminal')
    // Usage mistakes are thrown (exitOverride) and said in one line with exit 2, never commander's text and the help.
    .exitOverride()
    .configureOutput({ outputError: () => undefined });

  program
    .command('sync')
    .description(`walk resources into the warehouse: incremental from each watermark, resuming interrupted walks`)
    .argument('[resource...]', `any of: ${RESOURCE_NAMES.join(' ')} (default: all)`)
    .option('--full', 'walk every record, ignoring the watermarks (a later reconcile also detects deletions)')
    .option('--concurrency <n>', flagHelp('resourceConcurrency', 'resources walked at once'), positiveInt('--concurrency'))
    .action(async (resources: string[], options: { full?: boolean; concurrency?: number }) =>
      run(
        program,
        'sync',
        options.concurrency ? { resourceConcurrency: options.concurrency } : {},
        async (rt) => (await commands.sync()).syncCommand(rt, resources, options),
        { textfile: true, alert: true },
      ),
    );

  program
    .command('reconcile')
    .description('sweep every record: write what incremental walks cannot see (links, predictions), mark deleted records')
    .argument('[resource...]', `any of: ${RESOURCE_NAMES.join(' ')} (default: all)`)
    .option('--deep', "meeting logs: re-fetch every log's single view, catching summaries changed on any log (one request per log)")
    .option('--force', 'mark confirmed deletions even when more than SALESYNC_DELETE_SHARE of a table is missing')
    .option('--concurrency <n>', flagHelp('resourceConcurrency', 'resources swept at once'), positiveInt('--concurrency'))
    .action(async (resources: string[], options: { deep?: boolean; force?: boolean; concurrency?: number }) =>
      run(
        program,
        'reconcile',
        options.concurrency ? { resourceConcurrency: options.concurrency } : {},
        async (rt) => (await commands.reconcile()).reconcileCommand(rt, resources, options),
        { textfile: true, alert: true },
      ),
    );

  program
    .command('summaries')
    .description('re-read recent meeting logs whose summaries are due (sync does this too, hourly; env SALESYNC_SUMMARIES_WINDOW)')
    .option(
      '--recheck <duration>',
      'spacing of re-reads after a change, doubled for each unchanged read (default 5m)',
      duration('--recheck'),
    )
    .action(async (options: { recheck?: number }) =>
      run(program, 'summaries', {}, async (rt) => (await commands.summaries()).summariesCommand(rt, options), {
        textfile: true,
        alert: true,
      }),
    );

  program
    .command('backfill')
    .description(
      'replay one resource from --since (default: everything) without moving its watermark: here, or queued for the workers when REDIS_URL is set',
    )
    .argument('<resource>', `a record resource: ${RESOURCE_NAMES.filter((r) => r !== 'users').join(' ')}`)
    .option('--since <iso>', 'records updated at or after this instant (default: all)')
    .option('--until <iso>', 'the end of the window you care about (records updated later are true data and are written too)')
    .option('--wait', 'with REDIS_URL: run it here, in the foreground, instead of queueing a job')
    .action(async (resource: string, options: { since?: string; until?: string; wait?: boolean }) =>
      run(program, 'backfill', {}, async (rt) => (await commands.backfill()).backfillCommand(rt, resource, options), {
        textfile: true,
        alert: true,
      }),
    );

  program
    .command('worker')
    .description('run scheduled and queued jobs from Redis (REDIS_URL) until SIGTERM; serves bull-board and Prometheus metrics')
    .option('--concurrency <n>', flagHelp('workerConcurrency', 'jobs run at once'), positiveInt('--concurrency'))
    .option('--dashboard-port <port>', flagHelp('dashboardPort', 'bull-board port, 0 disables'), port('--dashboard-port'))
    .option('--dashboard-host <host>', flagHelp('dashboardHost'), listenHost('--dashboard-host'))
    .option('--metrics-port <port>', flagHelp('metricsPort', 'Prometheus /metrics port, 0 disables'), port('--metrics-port'))
    .option('--metrics-host <host>', flagHelp('metricsHost'), listenHost('--metrics-host'))
    .action(
      async (options: {
        concurrency?: number;
        dashboardPort?: number;
        dashboardHost?: string;
        metricsPort?: number;
        metricsHost?: string;
      }) =>
        run(
          program,
          'worker',
          {
            ...(options.concurrency ? { workerConcurrency: options.concurrency } : {}),
            ...(options.dashboardPort !== undefined ? { dashboardPort: options.dashboardPort } : {}),
            ...(options.dashboardHost !== undefined ? { dashboardHost: options.dashboardHost } : {}),
            ...(options.metricsPort !== undefined ? { metricsPort: options.metricsPort } : {}),
            ...(options.metricsHost !== undefined ? { metricsHost: options.metricsHost } : {}),
          },
          async (rt) => (await commands.worker()).workerCommand(rt),
          { stopIsSuccess: true, alert: true, stopGraceMs: WORKER_STOP_GRACE_MS },
        ),
    );

  program
    .command('schedule')
    .description(
      'register the Job Schedulers in Redis (idempotent): syncs every 15m, users hourly, reconcile nightly, deep reconcile of meeting logs weekly, summaries hourly',
    )
    .option('--list', 'show the registered schedules and change nothing')
    .option('--remove', "remove salesync's schedules (jobs already queued still run)")
    .option('--sync-every <duration>', flagHelp('syncEveryMs', 'incremental sync of each record resource'), duration('--sync-every'))
    .option('--users-every <duration>', flagHelp('usersEveryMs', 'users refresh'), duration('--users-every'))
    .option('--summaries-every <duration>', flagHelp('summariesEveryMs', 'summaries job'), duration('--summaries-every'))
    .option('--reconcile-cron <pattern>', flagHelp('reconcileCron', 'reconcile sweep'))
    .option('--deep-reconcile-cron <pattern>', flagHelp('deepReconcileCron', "deep reconcile of meeting logs, or 'off'"))
    .option('--timezone <tz>', flagHelp('timezone'))
    .option('--json', 'print JSON instead of a table')
    .action(async (options: ScheduleFlags) =>
      run(
        program,
        'schedule',
        {
          ...(options.syncEvery ? { syncEveryMs: options.syncEvery } : {}),
          ...(options.usersEvery ? { usersEveryMs: options.usersEvery } : {}),
          ...(options.summariesEvery ? { summariesEveryMs: options.summariesEvery } : {}),
          ...(options.reconcileCron ? { reconcileCron: options.reconcileCron } : {}),
          ...(options.deepReconcileCron ? { deepReconcileCron: options.deepReconcileCron } : {}),
          ...(options.timezone ? { timezone: options.timezone } : {}),
        },
        async (rt) => (await commands.schedule()).scheduleCommand(rt, options),
        { alert: !options.list },
      ),
    );

  program
    .command('status')
    .description('per resource: rows, watermark, freshness, quarantine and the last run; --check for cron and monitoring')
    .option('--json', 'print JSON instead of a table (with the problems --check would report)')
    .option(
      '--check',
      `exit ${EXIT_UNHEALTHY} with one line per problem when a resource is stale, its last run failed or records are in quarantine; 0 and silent otherwise`,
    )
    .option(
      '--max-age <age>',
      'stale past this: 1h (every resource), deals=2h (one; repeatable), or users=off (env SALESYNC_MAX_AGE, default 25h)',
      maxAge,
    )
    .action(async (options: { json?: boolean; check?: boolean; maxAge?: string[] }) =>
      run(
        program,
        'status',
        {},
        async (rt) =>
          (await commands.status()).statusCommand(rt, {
            ...(options.json ? { json: true } : {}),
            ...(options.check ? { check: true } : {}),
            maxAges: maxAges(rt.config, options.maxAge ?? []),
          }),
        { alert: options.check === true },
      ),
    );

  program
    .command('query')
    .description('run one read-only SQL query against the warehouse and print the rows')
    .argument('<sql>', 'e.g. "SELECT stage, count(*) FROM deals GROUP BY stage"')
    .option('--json', 'print JSON instead of a table')
    .action(async (sql: string, options: { json?: boolean }) =>
      run(program, 'query', {}, async (rt) => (await commands.query()).queryCommand(rt, sql, options), { dataOnStdout: true }),
    );

  program
    .command('export')
    .description('write every table and view of the warehouse as files (read-only), e.g. for pandas, Polars or Spark')
    .requiredOption('--out <dir>', 'directory to write into (created when missing; files of the same name are replaced)')
    .option('--format <format>', 'file format: parquet', 'parquet')
    .option('--json', 'print JSON instead of a table')
    .action(async (options: { out: string; format: string; json?: boolean }) =>
      run(program, 'export', {}, async (rt) => (await commands.export()).exportCommand(rt, options)),
    );

  program
    .command('changes')
    .description('print the inserts, updates and deletions committed after --since, in commit order, then the cursor for next time')
    .argument('[resource...]', `any of: ${RECORD_RESOURCE_NAMES.join(' ')} (default: all)`)
    .requiredOption(
      '--since <cursor|time>',
      'the cursor the last call printed (0: everything), or an ISO 8601 time such as 2026-01-05T00:00:00Z',
    )
    .option('--format <format>', 'ndjson (one change a line, then {"cursor":…}) or parquet (needs --output)', 'ndjson')
    .option('--output <file>', 'write the changes to this file; stdout then gets only the cursor line')
    .action(async (resources: string[], options: { since: string; format: string; output?: string }) =>
      run(program, 'changes', {}, async (rt) => (await commands.changes()).changesCommand(rt, resources, options), {
        dataOnStdout: true,
      }),
    );

  program
    .command('dbt-sources')
    .description('print a dbt sources.yml for dbt-duckdb: every table and column, display names, id tests, freshness')
    .option('--out <file>', 'write it to this file instead of stdout')
    .option('--source-name <name>', "the source's name in dbt ({{ source('<name>', 'deals') }})", 'salesync')
    .option('--database <alias>', "the name the dbt project attaches the warehouse under, when it is not the profile's own path")
    .action(async (options: { out?: string; sourceName: string; database?: string }) =>
      run(program, 'dbt-sources', {}, async (rt) => (await commands.dbtSources()).dbtSourcesCommand(rt, options), {
        dataOnStdout: true,
      }),
    );

  program
    .command('demo')
    .description('start the simulator, sync it into ./data/demo.duckdb, change records, sync again, and show the result')
    .action(async () =>
      // The demo deletes and rebuilds its file: never let WAREHOUSE_PATH point it at a real warehouse (nor -w:
      // runDemo refuses a file it did not build).
      run(
        program,
        'demo',
        { warehousePath: program.opts<GlobalFlags>().warehouse ?? DEMO_WAREHOUSE_PATH },
        async (rt) => (await commands.demo()).demoCommand(rt),
        {
          quiet: true,
        },
      ),
    );

  program
    .command('simulator')
    .description('run the Sales Records Service simulator (for trying salesync without the real service)')
    .option('-p, --port <port>', 'port to listen on (0: any free port)', port('--port'), 4010)
    .option('--host <host>', 'address to listen on', listenHost('--host'), '127.0.0.1')
    .option('--seed <n>', 'seed of the generated data', positiveInt('--seed'), 1)
    .option('--scale <n>', 'multiply the default data size by n', positiveNumber('--scale'), 1)
    .option('--rate-limit <n>', 'requests per minute per key', positiveInt('--rate-limit'), 1000)
    .action(async (options: { port: number; host: string; seed: number; scale: number; rateLimit: number }) =>
      run(program, 'simulator', {}, async (rt) => (await commands.simulator()).simulatorCommand(rt, options)),
    );

  return program;
}

/**
 * 141 (128 + SIGPIPE): what `seq`, `git log` and every C tool report when the reader closed the pipe, so a
 * pipefail script sees the same from us, and a command cut short never passes for a success.
 */
const EXIT_CLOSED_PIPE = 141;

/**
 * Node ignores SIGPIPE: a write to a pipe whose reader left (`salesync query … | head -1`) fails with EPIPE, an
 * 'error' on the stream that nobody handles, and a stack trace. Every output of the CLI goes through these two
 * streams (pino's own destination already drops its lines on EPIPE), so they are handled here, once.
 */
function endQuietlyWhenTheReaderLeaves(): void {
  const onOutputError = (error: NodeJS.ErrnoException) => {
    // The reader has what it wanted: nothing to say, and no one left to say it to.
    if (error.code === 'EPIPE') process.exit(EXIT_CLOSED_PIPE);
    const failure = new SalesyncError(
      'output_failed',
      `could not write the output (${error.code ?? error.message}): check where stdout and stderr go (a full disk, a closed terminal)`,
    );
    process.stderr.write(`${failureLine(failure)}\n`);
    process.exit(1);
  };
  process.stdout.on('error', onOutputError);
  process.stderr.on('error', onOutputError);
}

/** Parse and run; a usage mistake (unknown option, bad value) is one line with its code and exit 2. */
async function main(argv: readonly string[]): Promise<void> {
  endQuietlyWhenTheReaderLeaves();
  try {
    await buildProgram().parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      const failure = usageFailure(error);
      if (!failure) {
        process.exitCode = error.exitCode;
        return;
      }
      process.stderr.write(`${failureLine(failure)}\n`);
      process.exitCode = 2;
      return;
    }
    // An option parser's ConfigError (invalid_option), thrown while commander parsed.
    process.stderr.write(`${failureLine(error)}\n`);
    process.exitCode = exitCode(error, false);
  }
}

await main(process.argv);
