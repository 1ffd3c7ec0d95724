import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { assertApiKeyFormat, KeyPool, keyFingerprint, parseKeys } from '../../src/api/keys.js';
import { createSalesApi } from '../../src/api/client.js';
import { unlimited } from '../../src/limiter/token-bucket.js';
import { capturedLogger, rejectionOf, TEST_KEY } from './fake-service.js';

function formatError(key: string): ConfigError {
  try {
    assertApiKeyFormat(key);
  } catch (error) {
    return error as ConfigError;
  }
  throw new Error('expected the key to be rejected');
}

describe('API key format', () => {
  it('accepts sk_ followed by 40 or more base62 characters', () => {
    expect(() => assertApiKeyFormat(`sk_${'a'.repeat(40)}`)).not.toThrow();
    expect(() => assertApiKeyFormat(TEST_KEY)).not.toThrow();
  });

  it.each([
    ['empty', ''],
    ['no prefix', 'a'.repeat(50)],
    ['39 characters', `sk_${'Z9'.repeat(19)}x`],
    ['a dash', `sk_${'a'.repeat(30)}-${'b'.repeat(20)}`],
    ['surrounding spaces', ` sk_${'a'.repeat(45)} `],
    ['wrong prefix case', `SK_${'a'.repeat(45)}`],
  ])('rejects a key with %s as invalid_api_key_format', (_label, key) => {
    const error = formatError(key);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.code).toBe('invalid_api_key_format');
    expect(error.disposition).toBe('fatal');
    expect(error.message).toContain('SALES_API_KEY');
    expect(error.message).toContain('at least 40');
  });

  it('never repeats the rejected key in the message or context', () => {
    const secret = `sk_${'Qw7'.repeat(12)}`; // 36 characters: too short but otherwise key-like
    const error = formatError(secret);
    expect(JSON.stringify(error)).not.toContain(secret.slice(3));
    expect(error.message).not.toContain(secret.slice(3));
  });

  it('is checked by createSalesApi before any request', async () => {
    const { logger } = capturedLogger();
    const make = () => createSalesApi({ baseUrl: 'http://127.0.0.1:1', apiKey: 'sk_short', limiter: unlimited, logger });
    expect(make).toThrow(ConfigError);
    await expect(rejectionOf(Promise.resolve().then(make))).resolves.toMatchObject({ code: 'invalid_api_key_format' });
  });
});

describe('keyFingerprint', () => {
  it('is sk_… plus 8 hex digits of the SHA-256, stable and key-specific', () => {
    const fp = keyFingerprint(TEST_KEY);
    expect(fp).toMatch(/^sk_…[0-9a-f]{8}$/);
    expect(keyFingerprint(TEST_KEY)).toBe(fp);
    expect(keyFingerprint(`${TEST_KEY}x`)).not.toBe(fp);
    expect(fp).not.toContain(TEST_KEY.slice(3, 11));
  });

  it('matches sha256 of a known key', () => {
    // sha256("sk_" + 40 × "a") computed independently with `printf %s ... | sha256sum`.
    expect(keyFingerprint(`sk_${'a'.repeat(40)}`)).toBe('sk_…9792a91d');
  });
});

describe('KeyPool', () => {
  const key = (c: string) => `sk_${c.repeat(40)}`;
  const pool = () => new KeyPool(parseKeys({ apiKeys: [key('a'), key('b'), key('c')] }));

  it('drops a rejected key while another remains, never the last, and says which happened', () => {
    const keys = pool();
    const [a, b, c] = keys.fingerprints as [string, string, string];
    expect(keys.drop(a)).toBe('dropped');
    expect(keys.drop(a)).toBe('gone');
    expect(keys.drop(b)).toBe('dropped');
    expect(keys.drop(c)).toBe('last');
    expect(keys.live).toEqual([c]);
  });

  it('offers only live keys not set aside, and names the set-aside key that may send again first', () => {
    const keys = pool();
    const [a, b, c] = keys.fingerprints as [string, string, string];
    keys.setAside(b, { untilMs: 2000, source: 'Retry-After', seenOn: '429 GET /v1/deals/' });
    keys.setAside(c, { untilMs: 1500, source: 'X-RateLimit-Reset', seenOn: '200 GET /v1/deals/' });
    expect(keys.ready(1000)).toEqual([a]);
    expect(keys.ready(1600)).toEqual([a, c]);
    keys.drop(a);
    expect(keys.ready(1000)).toEqual([]);
    expect(keys.soonestSetAside()[0]).toBe(c);
  });

  it('redacts every key of the pool from a text a careless service echoed', () => {
    const keys = pool();
    expect(keys.redact(`{"note":"${key('b').slice(3)}"}`)).toBe('{"note":"…(redacted)"}');
  });
});
