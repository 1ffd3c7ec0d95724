/**
 * Every failure salesync reports is a SalesyncError: a stable `code` to branch on, what the runner should
 * do with it (`disposition`), and the context to act on. Messages say what to do; they never contain a key.
 */
export type ErrorDisposition =
  /** Retrying will not help (bad key, forbidden, invalid configuration): stop and tell the operator. */
  | 'fatal'
  /** Transient (network, 5xx, 429, a held lock): a later attempt may succeed. */
  | 'retriable';

export interface SalesyncErrorOptions {
  disposition?: ErrorDisposition;
  context?: Record<string, unknown>;
  cause?: unknown;
}

export class SalesyncError extends Error {
  readonly code: string;
  readonly disposition: ErrorDisposition;
  readonly context: Record<string, unknown>;

  constructor(code: string, message: string, options: SalesyncErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SalesyncError';
    this.code = code;
    this.disposition = options.disposition ?? 'fatal';
    this.context = options.context ?? {};
  }
}

/** Invalid configuration: a missing or malformed setting. Always fatal. */
export class ConfigError extends SalesyncError {
  constructor(code: string, message: string, context: Record<string, unknown> = {}) {
    super(code, message, { disposition: 'fatal', context });
    this.name = 'ConfigError';
  }
}

/** The one-line form used on stderr: `code: message`. */
export function describeError(error: unknown): { code: string; message: string } {
  if (error instanceof SalesyncError) return { code: error.code, message: error.message };
  if (error instanceof Error) return { code: 'internal', message: error.message };
  return { code: 'internal', message: String(error) };
}

/** Text shaped like an API key: `sk_` and a run of base62, in either case (a key fingerprint, `sk_…` + hex, is not). */
const KEY_SHAPED = /sk_[a-z0-9]{6,}/gi;

/** `text` with everything shaped like an API key replaced: for any text that reaches a message or a log. */
export function redactKeys(text: string): string {
  return text.replace(KEY_SHAPED, 'sk_…(redacted)');
}

/**
 * A value as an error message may quote it: never one that looks like an API key pasted into the wrong setting,
 * nor a very long one.
 */
export function shown(value: string): string {
  if (redactKeys(value) !== value || value.length > 80) return 'a value not shown here (it looks like a key or is very long)';
  return JSON.stringify(value);
}
