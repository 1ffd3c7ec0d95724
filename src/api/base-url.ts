/** The service's base URL: checked and split before any request, and what about a working one deserves a warning. */
import { ConfigError } from '../core/errors.js';
import { looksLikeApiKey } from './errors.js';

const BASE_URL_SETTING = { setting: 'SALES_API_BASE_URL' };

/**
 * The base URL checked and split: `prefix` has no trailing slash; `host` is safe to print. A pasted API root
 * (`…/v1` or `…/v1/`) is accepted: the client appends `/v1/…` itself. No error repeats the value, which may be a
 * key pasted into the wrong setting.
 */
export function parseBaseUrl(baseUrl: string): { prefix: string; host: string } {
  if (looksLikeApiKey(baseUrl)) {
    throw new ConfigError(
      'invalid_base_url',
      'the service base URL holds what looks like an API key (not shown). Put the key in SALES_API_KEY, and the ' +
        'service address, such as https://api.example.com, in SALES_API_BASE_URL.',
      BASE_URL_SETTING,
    );
  }
  let url: URL | null = null;
  try {
    url = new URL(baseUrl);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    throw new ConfigError(
      'invalid_base_url',
      'the service base URL is not an http(s) URL without query or fragment, such as https://api.example.com ' +
        'or http://127.0.0.1:4010 (/v1/... is appended). Set SALES_API_BASE_URL.',
      BASE_URL_SETTING,
    );
  }
  if (url.username || url.password) {
    throw new ConfigError(
      'invalid_base_url',
      'the service base URL must not carry a user name or password: the API key is sent as a Bearer token. ' +
        'Remove them from SALES_API_BASE_URL and set SALES_API_KEY.',
      BASE_URL_SETTING,
    );
  }
  const path = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return { prefix: `${url.origin}${path}`, host: url.host };
}

/**
 * What is worth a warning in a base URL that works: one line each, for the CLI to log once at start. Empty for a
 * URL `parseBaseUrl` refuses (its error says why).
 */
export function baseUrlWarnings(baseUrl: string): string[] {
  let host: string;
  try {
    host = parseBaseUrl(baseUrl).host;
  } catch {
    return [];
  }
  const url = new URL(baseUrl);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    return [
      `SALES_API_BASE_URL is plain http:// to ${host}: the API key travels to it in clear text, readable by anyone ` +
        'on the way. Use https://.',
    ];
  }
  return [];
}

/** localhost (and `*.localhost`), 127.0.0.0/8 and ::1 (IPv4-mapped 127/8 included), as `URL#hostname` spells them. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host === '::1' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) ||
    /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(host)
  );
}
