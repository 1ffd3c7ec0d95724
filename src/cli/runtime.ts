import type { Logger } from 'pino';
import { pino } from 'pino';
import { loadConfig, type Config } from '../config.js';
import { describeError } from '../core/errors.js';
import { createLogger } from '../logger.js';
import { humanLogStream } from './log-lines.js';
import { ProgressDisplay } from './progress-display.js';

/**
 * What a command gets: configuration, a logger, a progress display when a person is watching, and a signal
 * that SIGINT/SIGTERM abort. On a terminal: a live display with warnings above it; otherwise pino JSON lines
 * on stdout, for cron and log shippers.
 */
export interface CliRuntime {
  config: Config;
  logger: Logger;
  display: ProgressDisplay | null;
  signal: AbortSignal;
  interactive: boolean;
  /** Write to stdout (results; tables on a terminal). */
  out(text: string): void;
  close(): void;
}

export interface RuntimeOptions {
  env: Record<string, string | undefined>;
  overrides: Partial<Config>;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** Show the progress display (default: when stderr is a terminal). */
  progress?: boolean;
  /** Log only warnings unless LOG_LEVEL asks for more: for commands whose output is meant for a person. */
  quiet?: boolean;
}

export function createRuntime(options: RuntimeOptions): CliRuntime {
  const config = loadConfig(options.env, options.overrides);
  const interactive = options.progress ?? Boolean(options.stderr.isTTY);
  const display = interactive ? new ProgressDisplay(options.stderr) : null;
  // A person at a terminal sees warnings by default; a log shipper gets everything at LOG_LEVEL.
  const level = (interactive || options.quiet) && !options.env.LOG_LEVEL && !options.overrides.logLevel ? 'warn' : config.logLevel;
  const logger: Logger = display
    ? pino({ level, base: { app: 'salesync' }, timestamp: pino.stdTimeFunctions.isoTime }, humanLogStream((line) => display.log(line)))
    : createLogger(level, pino.destination({ dest: 1, sync: true }));
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(130);
    logger.warn({ signal }, 'stopping: committing the pages already fetched (press again to quit at once)');
    controller.abort(new Error(`received ${signal}`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    config,
    logger,
    display,
    signal: controller.signal,
    interactive,
    out: (text) => options.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    close: () => {
      display?.stop();
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** The one line an operator reads on failure: `salesync: <code>: <what happened and what to do>`. */
export function failureLine(error: unknown): string {
  const { code, message } = describeError(error);
  const oneLine = message.replace(/\s*\n\s*/g, ' ').trim();
  return `salesync: ${code}: ${oneLine}`;
}
