import { ConfigError } from '../core/errors.js';

const WHY: Record<string, string> = {
  ENOENT: 'a directory above it does not exist and cannot be made there',
  ENOTDIR: 'a file stands where a directory is needed',
  EEXIST: 'a file stands where a directory is needed',
  EISDIR: 'it is a directory, not a file',
  EACCES: 'this account may not write there',
  EPERM: 'this account may not write there',
  EROFS: 'the file system is read-only',
};

/**
 * A file system's refusal to write where an option pointed (`--out`, `--output`) as the operator's mistake it is:
 * one line with code `invalid_output_path` (exit 2) naming the option and the path; anything else is rethrown.
 */
export function outputPathError(error: unknown, option: string, path: string): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const why = typeof code === 'string' ? WHY[code] : undefined;
  if (why === undefined) return error;
  return new ConfigError(
    'invalid_output_path',
    `${option} ${JSON.stringify(path)}: ${why} (${code}): choose a path this account can write`,
    {
      option,
      path,
    },
  );
}
