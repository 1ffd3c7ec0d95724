import { CommanderError } from 'commander';
import { LOG_LEVELS } from '../config.js';
import { MAX_SPAN_MS } from '../settings.js';
import { ConfigError, shown } from '../core/errors.js';
import { parseDurationMs } from '../core/time.js';
import { parseMaxAge } from './health-check.js';

/**
 * The parsers of every option value, and commander's own usage errors, as one line with a stable code
 * (`invalid_option`, `unknown_option`…) and exit 2: a mistyped flag in a crontab is a configuration error, said
 * in the words of the flag, never commander's text followed by the whole help.
 */

export { shown };

export function invalidOption(option: string, expected: string, value: string): ConfigError {
  return new ConfigError('invalid_option', `${option} ${expected} (got ${shown(value)})`, { option });
}

/** A whole number of at least 1 (`--concurrency`). */
export function positiveInt(option: string): (value: string) => number {
  return (value) => {
    const n = Number(value.trim());
    if (!/^\s*\d+\s*$/.test(value) || !Number.isSafeInteger(n) || n < 1)
      throw invalidOption(option, 'must be a whole number of at least 1, such as 3', value);
    return n;
  };
}

/** A positive number (`--scale 0.5`). */
export function positiveNumber(option: string): (value: string) => number {
  return (value) => {
    const n = Number(value.trim());
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
      throw invalidOption(option, 'must be a number above 0, such as 1 or 0.5', value);
    return n;
  };
}

/** A TCP port; 0 disables the server. */
export function port(option: string): (value: string) => number {
  return (value) => {
    const n = Number(value.trim());
    if (!/^\s*\d+\s*$/.test(value) || n > 65_535)
      throw invalidOption(option, 'must be a port number from 1 to 65535, or 0 to disable it', value);
    return n;
  };
}

/** An address to listen on (`--dashboard-host 0.0.0.0`). */
export function listenHost(option: string): (value: string) => string {
  return (value) => {
    const host = value.trim();
    if (!/^[A-Za-z0-9.:_-]+$/.test(host) || host.includes('://'))
      throw invalidOption(option, 'must be an address to listen on, such as 127.0.0.1 or 0.0.0.0', value);
    return host;
  };
}

/** A duration (`90s`, `15m`, `1h`; a bare number is seconds). */
export function duration(option: string): (value: string) => number {
  return (value) => {
    const ms = parseDurationMs(value.trim());
    if (ms === null || ms < 1 || ms > MAX_SPAN_MS)
      throw invalidOption(option, 'must be a duration such as 90s, 15m or 1h, at most 100 years', value);
    return ms;
  };
}

export function logLevel(value: string): string {
  const level = value.trim().toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    throw invalidOption('--log-level', `must be one of ${LOG_LEVELS.join(', ')}`, value);
  return level;
}

/** `--max-age`, repeatable: each value is checked here, and folded over SALESYNC_MAX_AGE when the command runs. */
export function maxAge(value: string, previous: string[] = []): string[] {
  parseMaxAge(value, { default: null, perResource: {} });
  return [...previous, value];
}

const USAGE_CODES: Record<string, string> = {
  'commander.unknownCommand': 'unknown_command',
  'commander.unknownOption': 'unknown_option',
  'commander.missingArgument': 'missing_argument',
  'commander.missingMandatoryOptionValue': 'missing_option',
};

/**
 * Commander's own failure (thrown by `exitOverride`) as a ConfigError, or null when it is not a failure
 * (`--help`, `--version`, or the help shown for a missing command, which keep commander's exit code).
 */
export function usageFailure(error: CommanderError): ConfigError | null {
  if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return null;
  const message = error.message
    .replace(/^error:\s*/i, '')
    .replace(/\s*\n\s*/g, ' ')
    .trim();
  return new ConfigError(USAGE_CODES[error.code] ?? 'invalid_option', `${message} (see salesync --help, or salesync <command> --help)`);
}
