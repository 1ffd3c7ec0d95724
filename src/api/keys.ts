import { createHash } from 'node:crypto';
import { ConfigError } from '../core/errors.js';

/** Spec (Authentication 2): `sk_` followed by at least 40 base62 characters. */
export const API_KEY_PATTERN = /^sk_[A-Za-z0-9]{40,}$/;

/**
 * Throws `invalid_api_key_format` unless `apiKey` looks like a service key. Checked before any request so a
 * pasted placeholder or a truncated key fails in the operator's terminal, not as a 401 deep in a run.
 * The message and context describe the shape only: the value itself is never repeated.
 */
export function assertApiKeyFormat(apiKey: string): void {
  if (typeof apiKey === 'string' && API_KEY_PATTERN.test(apiKey)) return;
  const hint = describeKeyShape(apiKey);
  throw new ConfigError(
    'invalid_api_key_format',
    `the API key does not look like a Sales Records Service key (${hint}): a key is "sk_" followed by at least 40 ` +
      "letters and digits (A-Z, a-z, 0-9), as issued once in the service's administration screen. " +
      'Set SALES_API_KEY to the whole key, without quotes or spaces.',
    { setting: 'SALES_API_KEY' },
  );
}

/** What is wrong with the key, in words that reveal nothing of it. */
function describeKeyShape(apiKey: unknown): string {
  if (typeof apiKey !== 'string' || apiKey.length === 0) return 'it is empty';
  if (!apiKey.startsWith('sk_')) return 'it does not start with "sk_"';
  const rest = apiKey.slice(3);
  if (/[^A-Za-z0-9]/.test(rest)) return 'it contains characters other than letters and digits after "sk_"';
  return `it has ${rest.length} characters after "sk_", fewer than 40`;
}

/** A stable, non-secret name for a key: `sk_…` + the first 8 hex digits of its SHA-256. */
export function keyFingerprint(apiKey: string): string {
  return `sk_…${createHash('sha256').update(apiKey, 'utf8').digest('hex').slice(0, 8)}`;
}
