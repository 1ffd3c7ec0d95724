/**
 * SALES_API_BASE_URL as the client reads it: a pasted API root is accepted, a pasted key is never repeated, and a
 * plain-http address off this machine earns one warning.
 */
import { describe, expect, it } from 'vitest';
import { baseUrlWarnings } from '../../src/api/index.js';
import { isLoopbackHost, parseBaseUrl } from '../../src/api/client.js';
import { loadConfig, requireService } from '../../src/config.js';
import { ConfigError } from '../../src/core/errors.js';
import { TEST_KEY } from './fake-service.js';

const SECRET = TEST_KEY.slice(3);

function thrown(work: () => unknown): ConfigError {
  try {
    work();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('parseBaseUrl', () => {
  it.each([
    ['https://api.example.com', 'https://api.example.com'],
    ['https://api.example.com/', 'https://api.example.com'],
    ['https://api.example.com/v1', 'https://api.example.com'],
    ['https://api.example.com/v1/', 'https://api.example.com'],
    ['https://api.example.com/sales/v1//', 'https://api.example.com/sales'],
    ['http://127.0.0.1:4010/v1/', 'http://127.0.0.1:4010'],
    ['https://api.example.com/v10', 'https://api.example.com/v10'],
  ])('accepts %s, the API root pasted with /v1 included, as prefix %s', (given, prefix) => {
    expect(parseBaseUrl(given).prefix).toBe(prefix);
  });

  it.each([
    ['a bare key', TEST_KEY],
    ['a key as the host', `https://${TEST_KEY}`],
    ['a key in the path', `https://api.example.com/${TEST_KEY}/`],
    ['a long scheme-less token', SECRET],
    ['a key with user info', `https://user:${TEST_KEY}@api.example.com`],
  ])('refuses %s with invalid_base_url, never repeating the value', (_label, value) => {
    const error = thrown(() => parseBaseUrl(value));
    expect(error.code).toBe('invalid_base_url');
    for (const text of [error.message, JSON.stringify(error.context)]) {
      expect(text).not.toContain(SECRET);
      expect(text.toLowerCase()).not.toContain(SECRET.toLowerCase());
    }
  });

  it('says a value that looks like a key belongs in SALES_API_KEY', () => {
    expect(thrown(() => parseBaseUrl(TEST_KEY)).message).toContain('looks like an API key (not shown). Put the key in SALES_API_KEY');
  });

  it('refuses what is not an http(s) URL or carries a password, without repeating the value', () => {
    for (const value of [
      'ftp://files.example.org',
      'sales.example.org',
      'https://sales.example.org/?x=1',
      'https://me:hunter2@sales.example.org',
    ]) {
      const error = thrown(() => parseBaseUrl(value));
      expect(error.code, value).toBe('invalid_base_url');
      expect(error.message, value).not.toContain(value);
      expect(error.message, value).not.toContain('hunter2');
    }
  });
});

describe('requireService (SALES_API_BASE_URL)', () => {
  it('never repeats a value without a scheme, and says a key-looking one belongs in SALES_API_KEY', () => {
    const key = thrown(() => requireService(loadConfig({ SALES_API_BASE_URL: TEST_KEY, SALES_API_KEY: TEST_KEY })));
    expect(key.code).toBe('invalid_base_url');
    expect(key.message).not.toContain(SECRET);
    expect(key.message).toContain('SALES_API_KEY');
    const host = thrown(() => requireService(loadConfig({ SALES_API_BASE_URL: 'sales.example.com', SALES_API_KEY: TEST_KEY })));
    expect(host.message).not.toContain('sales.example.com"');
    expect(host.message).toContain('does not start with http:// or https://');
  });
});

describe('baseUrlWarnings', () => {
  it('warns once that the key travels in clear text over plain http to a host that is not this machine', () => {
    const warnings = baseUrlWarnings('http://sales.internal.example:8080/v1/');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('plain http:// to sales.internal.example:8080');
    expect(warnings[0]).toContain('clear text');
    expect(warnings[0]).not.toContain('\n');
  });

  it('says nothing for https, for loopback over http, or for a URL parseBaseUrl refuses', () => {
    for (const url of [
      'https://sales.example.com',
      'http://127.0.0.1:4010',
      'http://127.8.9.10',
      'http://localhost:4010/v1',
      'http://api.localhost',
      'http://[::1]:4010',
      'http://[::ffff:127.0.0.1]:4010',
      `http://${TEST_KEY}`,
      'not a url',
    ]) {
      expect(baseUrlWarnings(url), url).toEqual([]);
    }
  });

  it('counts as loopback only 127.0.0.0/8, ::1 and localhost', () => {
    expect(['127.0.0.1', '127.255.0.1', '[::1]', 'localhost', 'LOCALHOST.', 'a.localhost', '[::ffff:7f00:1]'].every(isLoopbackHost)).toBe(
      true,
    );
    expect(['128.0.0.1', '10.0.0.1', '[::2]', 'localhost.example.com', '127.0.0.1.nip.io', '0.0.0.0'].some(isLoopbackHost)).toBe(false);
  });
});
