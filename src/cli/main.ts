#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import type { Config } from '../config.js';
import { ConfigError } from '../core/errors.js';
import { projectRoot } from '../core/paths.js';
import { RESOURCE_NAMES } from '../core/resources.js';
import { demoCommand } from './commands/demo.js';
import { queryCommand } from './commands/query.js';
import { simulatorCommand } from './commands/simulator.js';
import { statusCommand } from './commands/status.js';
import { syncCommand } from './commands/sync.js';
import { createRuntime, failureLine, type CliRuntime } from './runtime.js';

const version = (JSON.parse(readFileSync(join(projectRoot(import.meta.url), 'package.json'), 'utf8')) as { version: string }).version;

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number of at least 1');
  return n;
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
  options: { quiet?: boolean } = {},
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
    if (runtime.signal.aborted) process.exitCode = 130;
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
      run(program, options.concurrency ? { resourceConcurrency: options.concurrency } : {}, (rt) =>
        syncCommand(rt, resources, options),
      ),
    );

  program
    .command('status')
    .description('per resource: rows, watermark, freshness and the last run')
    .option('--json', 'print JSON instead of a table')
    .action(async (options: { json?: boolean }) => run(program, {}, (rt) => statusCommand(rt, options)));

  program
    .command('query')
    .description('run one read-only SQL query against the warehouse and print the rows')
    .argument('<sql>', 'e.g. "SELECT stage, count(*) FROM deals GROUP BY stage"')
    .option('--json', 'print JSON instead of a table')
    .action(async (sql: string, options: { json?: boolean }) => run(program, {}, (rt) => queryCommand(rt, sql, options)));

  program
    .command('demo')
    .description('start the simulator, sync it into ./data/demo.duckdb, change records, sync again, and show the result')
    .action(async () =>
      // The demo deletes and rebuilds its file: never let WAREHOUSE_PATH point it at a real warehouse.
      run(program, { warehousePath: program.opts<GlobalFlags>().warehouse ?? './data/demo.duckdb' }, (rt) => demoCommand(rt), {
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
      run(program, {}, (rt) => simulatorCommand(rt, options)),
    );

  return program;
}

await buildProgram().parseAsync(process.argv);
