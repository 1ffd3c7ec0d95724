import { describe, expect, it } from 'vitest';
import { SalesyncError } from '../../src/core/errors.js';
import {
  InvalidRecordError,
  RateLimitWaitError,
  SalesApiError,
  codeForStatus,
  dispositionFor,
  formatWait,
  isRateLimited,
  looksLikeApiKey,
  salesApiErrorFromResponse,
} from '../../src/api/errors.js';

const extra = { keyFingerprint: 'sk_…1a2b3c4d', attempts: 1, maxRetryAfterMs: 120_000 };

function fromEnvelope(status: number, code: string, message: string, more: Record<string, unknown> = {}) {
  return salesApiErrorFromResponse(
    { status, body: JSON.stringify({ error: { code, message, ...more } }), method: 'GET', path: '/v1/deals/' },
    extra,
  );
}

describe('dispositionFor', () => {
  it.each([
    ['unauthorized', 401, 'fatal'],
    ['forbidden', 403, 'fatal'],
    ['validation_error', 400, 'fatal'],
    ['invalid_request', 400, 'fatal'],
    ['not_found', 404, 'fatal'],
    ['rate_limited', 429, 'retriable'],
    ['internal_error', 500, 'retriable'],
    ['internal_error', 400, 'retriable'],
  ])('treats %s (%i) as %s', (code, status, disposition) => {
    expect(dispositionFor(code, status)).toBe(disposition);
  });

  it('judges an unknown code by its status: 5xx retriable, others fatal', () => {
    expect(dispositionFor('quota_exceeded', 503)).toBe('retriable');
    expect(dispositionFor('conflict', 409)).toBe('fatal');
  });
});

describe('isRateLimited', () => {
  it('is a 429, or the rate_limited code under another error status, never a 2xx or another code', () => {
    const envelope = (code: string) => Buffer.from(JSON.stringify({ error: { code, message: '制限超過' } }));
    expect(isRateLimited(429, undefined)).toBe(true);
    expect(isRateLimited(503, envelope('rate_limited'))).toBe(true);
    expect(isRateLimited(403, envelope('rate_limited'))).toBe(true);
    expect(isRateLimited(503, envelope('internal_error'))).toBe(false);
    expect(isRateLimited(200, envelope('rate_limited'))).toBe(false);
    expect(isRateLimited(503, Buffer.from('<html>rate_limited</html>'))).toBe(false);
  });
});

describe('salesApiErrorFromResponse', () => {
  it('keeps the service code, status and Japanese message as sent', () => {
    const error = fromEnvelope(401, 'unauthorized', 'APIキーが無効です');
    expect(error).toBeInstanceOf(SalesApiError);
    expect(error).toBeInstanceOf(SalesyncError);
    expect(error).toMatchObject({
      code: 'unauthorized',
      status: 401,
      serviceMessage: 'APIキーが無効です',
      method: 'GET',
      path: '/v1/deals/',
      disposition: 'fatal',
      fields: [],
    });
  });

  it('says which key was rejected and where to fix it on 401', () => {
    const { message } = fromEnvelope(401, 'unauthorized', 'APIキーが無効です');
    expect(message).toBe(
      'the service rejected the API key sk_…1a2b3c4d (401 GET /v1/deals/: "APIキーが無効です"). ' +
        "Check SALES_API_KEY: the key may be mistyped or revoked, or this machine's IP address may not be allowed.",
    );
  });

  it('says a sync needs a read key on 403', () => {
    const { message } = fromEnvelope(403, 'forbidden', '権限がありません');
    expect(message).toContain('role is too low');
    expect(message).toContain('read role');
    expect(message).toContain('"権限がありません"');
  });

  it('lists the field errors of a validation_error', () => {
    const fields = [
      { name: 'filter_groups[0].conditions[0].operator', code: 'invalid_value', message: '演算子が不正です' },
      { name: 'page', code: 'out_of_range', message: '範囲外です' },
    ];
    const error = fromEnvelope(400, 'validation_error', '入力が不正です', { fields });
    expect(error.fields).toEqual(fields);
    expect(error.message).toContain('filter_groups[0].conditions[0].operator (invalid_value: "演算子が不正です")');
    expect(error.message).toContain('page (out_of_range: "範囲外です")');
  });

  it('tolerates an unknown code, keeping it and judging by status', () => {
    const error = fromEnvelope(503, 'maintenance_window', 'メンテナンス中です');
    expect(error.code).toBe('maintenance_window');
    expect(error.disposition).toBe('retriable');
    expect(error.message).toContain('"maintenance_window"');
    expect(error.message).toContain('run again later');
  });

  it('reads a non-envelope body (an HTML 502) by its status', () => {
    const error = salesApiErrorFromResponse(
      { status: 502, body: '<html><body>Bad Gateway</body></html>', method: 'GET', path: '/v1/deals/' },
      extra,
    );
    expect(error).toMatchObject({ code: 'http_502', status: 502, serviceMessage: null, disposition: 'retriable' });
    expect(codeForStatus(401)).toBe('unauthorized');
  });

  it('keeps every message on one line', () => {
    const error = fromEnvelope(500, 'internal_error', '一行目\n二行目');
    expect(error.message).not.toContain('\n');
    expect(error.serviceMessage).toBe('一行目\n二行目');
  });

  it('says how long a too-long Retry-After asked for', () => {
    const error = salesApiErrorFromResponse(
      {
        status: 429,
        body: JSON.stringify({ error: { code: 'rate_limited', message: '制限超過' } }),
        method: 'GET',
        path: '/v1/deals/',
        retryAfterMs: 600_000,
      },
      extra,
    );
    expect(error.retryAfterMs).toBe(600_000);
    expect(error.context).toMatchObject({ retryAfterMs: 600_000 });
    expect(error.message).toContain('wait 10 min (Retry-After, on 429 GET /v1/deals/: "制限超過"), longer than the 2 min');
    expect(error.message).toContain('(SALES_API_MAX_WAIT)');
    expect(error.message).toContain('the next run resumes from its checkpoint');
  });

  it('redacts anything key-shaped that the service echoes back', () => {
    const key = `sk_${'x1'.repeat(25)}`;
    const error = fromEnvelope(401, 'unauthorized', `キー ${key} は無効です`);
    expect(error.serviceMessage).not.toContain(key);
    expect(error.message).not.toContain(key);
  });
});

describe('RateLimitWaitError', () => {
  const details = {
    method: 'GET',
    path: '/v1/companies/',
    keyFingerprint: 'sk_…1a2b3c4d',
    keyCount: 1,
    waitMs: 3_600_000,
    maxRetryAfterMs: 120_000,
    seenOn: '200 GET /v1/deals/',
  };

  it('says on one line how long the service asked to wait, which header said so, the setting, and what the next run does', () => {
    const error = new RateLimitWaitError({ ...details, source: 'X-RateLimit-Reset' });
    expect(error).toBeInstanceOf(SalesyncError);
    expect(error).toMatchObject({ code: 'rate_limited', disposition: 'retriable', waitMs: 3_600_000, source: 'X-RateLimit-Reset' });
    expect(error.message).toBe(
      'GET /v1/companies/: the service asked key sk_…1a2b3c4d to wait 1 h (X-RateLimit-Remaining 0 until ' +
        'X-RateLimit-Reset, on 200 GET /v1/deals/), longer than the 2 min the client waits by itself ' +
        '(SALES_API_MAX_WAIT). The run stops here rather than hang; the next run resumes from its checkpoint. If ' +
        "something else spends the key's or the organization's budget, give this sync its own key.",
    );
    // retryAfterMs is what the worker delays a job by, as for a 429's own error.
    expect(error.context).toMatchObject({
      keyFingerprint: 'sk_…1a2b3c4d',
      waitMs: 3_600_000,
      retryAfterMs: 3_600_000,
      maxRetryAfterMs: 120_000,
    });
  });

  it('names the key that frees first when every key of a pool is waiting', () => {
    const error = new RateLimitWaitError({ ...details, keyCount: 3, source: 'Retry-After' });
    expect(error.message).toContain('asked every key; the first to free up, sk_…1a2b3c4d, to wait 1 h (Retry-After,');
  });
});

describe('formatWait', () => {
  it('reads as seconds, minutes, hours or days', () => {
    expect([0, 1, 999, 45_000, 120_000, 600_000, 3_600_000, 5_400_000, 86_400_000, 3 * 86_400_000].map(formatWait)).toEqual([
      '0 s',
      '1 s',
      '1 s',
      '45 s',
      '2 min',
      '10 min',
      '1 h',
      '1.5 h',
      '24 h',
      '3 d',
    ]);
  });
});

describe('looksLikeApiKey', () => {
  it('spots a key anywhere, in either case, and a long scheme-less token; not an address', () => {
    const key = `sk_${'Ab3dE5gH7j'.repeat(5)}`;
    for (const value of [
      key,
      ` ${key} `,
      `https://${key.toLowerCase()}.example.com`,
      `https://api.example.com/${key}`,
      'Ab3dE5gH7jAb3dE5gH7jAb3dE5gH7jAb3d',
    ]) {
      expect(looksLikeApiKey(value), value).toBe(true);
    }
    for (const value of ['https://api.example.com', 'http://127.0.0.1:4010/v1/', 'api.example.com', 'localhost:4010', 'sk_short']) {
      expect(looksLikeApiKey(value), value).toBe(false);
    }
  });
});

describe('InvalidRecordError', () => {
  it('is a fatal invalid_record naming the record first, with the quarantine entry and path in its context', () => {
    const raw = '{"id":"0123456789abcdefgh","properties":{"x":{"a":1}}}';
    const reason = 'properties.x: must be a string, a finite number, a boolean or null';
    const path = '/v1/meeting-logs/0123456789abcdefgh/';
    const error = new InvalidRecordError({ resource: 'meeting-logs', id: '0123456789abcdefgh', raw, reason, method: 'GET', path });
    expect(error).toBeInstanceOf(SalesyncError);
    expect(error).toMatchObject({
      name: 'InvalidRecordError',
      code: 'invalid_record',
      disposition: 'fatal',
      recordId: '0123456789abcdefgh',
      raw,
      reason,
      path,
    });
    expect(error.context).toEqual({ id: '0123456789abcdefgh', raw, reason, path });
    expect(error.message).toBe(
      `meeting-logs 0123456789abcdefgh: ${reason}. The service sent this record (GET ${path}) in a shape the spec does ` +
        "not allow, so it cannot be mirrored as it is; retrying will not change it. Report it to the service's owner " +
        "with the record's id.",
    );
  });
});
