import type { Logger } from 'pino';
import { pino } from 'pino';
import { loadConfig, type Config } from '../config.js';
import { describeError, redactKeys, SalesyncError } from '../core/errors.js';
import { createLogger } from '../logger.js';
import { humanLogStream } from './log-lines.js';
import type { ProgressDisplay } from './progress-display.js';

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
  /** Log to stderr: the command's stdout is data (a feed, query rows, YAML) that a log line would corrupt. */
  logsToStderr?: boolean;
  /**
   * After the first SIGINT/SIGTERM, how long the command may take to commit what it fetched and stop; past it the
   * process ends with exit 130 (a second signal ends it at once). @defaultValue STOP_GRACE_MS
   */
  stopGraceMs?: number;
  /** Ends the process (tests replace it). @defaultValue process.exit */
  exit?: (code: number) => void;
}

/** How long a stopping command may take: a commit of the pages in hand takes well under this. */
export const STOP_GRACE_MS = 8000;

export async function createRuntime(options: RuntimeOptions): Promise<CliRuntime> {
  const config = loadConfig(options.env, options.overrides);
  const interactive = options.progress ?? Boolean(options.stderr.isTTY);
  // The display's terminal libraries load only when a person is watching: cron runs never pay for them.
  const display = interactive ? new (await import('./progress-display.js')).ProgressDisplay(options.stderr) : null;
  // A person at a terminal sees warnings by default; a log shipper gets everything at LOG_LEVEL.
  const level = (interactive || options.quiet) && !options.env.LOG_LEVEL && !options.overrides.logLevel ? 'warn' : config.logLevel;
  // One logger, redaction included, whichever way its lines go: above the live display, or JSON on stdout (stderr
  // for commands whose stdout is data).
  const logger: Logger = createLogger(
    level,
    display ? humanLogStream((line) => display.log(line)) : pino.destination({ dest: options.logsToStderr ? 2 : 1, sync: true }),
  );
  const controller = new AbortController();
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const stopGraceMs = options.stopGraceMs ?? STOP_GRACE_MS;
  let deadline: NodeJS.Timeout | undefined;
  const endNow = (why: string) => {
    display?.stop();
    options.stderr.write(`${failureLine(new SalesyncError('interrupted', why))}\n`);
    exit(130);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      endNow(
        `stopped at once by a second ${signal}: pages not yet committed are fetched again by the next run, which resumes from the last checkpoint`,
      );
      return;
    }
    logger.warn({ signal }, 'stopping: committing the pages already fetched (press again to quit at once)');
    controller.abort(
      new SalesyncError('interrupted', `stopped by ${signal}: the pages fetched were committed; the next run resumes from its checkpoint`, {
        disposition: 'retriable',
      }),
    );
    // A command stuck where no signal reaches (a library waiting on a connection) still ends: the grace is a bound.
    deadline = setTimeout(
      () =>
        endNow(
          `stopped by ${signal}, ending after ${Math.round(stopGraceMs / 1000)}s without waiting further: the next run resumes from the last checkpoint`,
        ),
      stopGraceMs,
    ).unref();
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
      clearTimeout(deadline);
      display?.stop();
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/**
 * The one line an operator reads on failure: `salesync: <code>: <what happened and what to do>`. Anything shaped
 * like an API key is redacted here too, whatever raised it: the messages that quote values never quote one
 * (`shown`), and this is the net under a message that would.
 */
export function failureLine(error: unknown): string {
  const { code, message } = describeError(error);
  const oneLine = message.replace(/\s*\n\s*/g, ' ').trim();
  return redactKeys(`salesync: ${code}: ${oneLine}`);
}
