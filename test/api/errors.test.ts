import { describe, expect, it } from 'vitest';
import { SalesyncError } from '../../src/core/errors.js';
import {
  InvalidRecordError,
  SalesApiError,
  codeForStatus,
  dispositionFor,
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
    expect(error.message).toContain('wait 600 s, longer than the 120 s');
  });

  it('redacts anything key-shaped that the service echoes back', () => {
    const key = `sk_${'x1'.repeat(25)}`;
    const error = fromEnvelope(401, 'unauthorized', `キー ${key} は無効です`);
    expect(error.serviceMessage).not.toContain(key);
    expect(error.message).not.toContain(key);
  });
});

describe('InvalidRecordError', () => {
  it('is a fatal invalid_record naming the record first, with the quarantine entry and path in its context', () => {
    const raw = '{"id":"0123456789abcdefgh","properties":{"x":{"a":1}}}';
    const reason = 'properties.x: must be a string, a finite number, a boolean or null';
    const path = '/v1/meeting-logs/0123456789abcdefgh/';
    const error = new InvalidRecordError({ resource: 'meeting-logs', id: '0123456789abcdefgh', raw, reason, method: 'GET', path });
    expect(error).toBeInstanceOf(SalesyncError);
    expect(error).toMatchObject({ name: 'InvalidRecordError', code: 'invalid_record', disposition: 'fatal', recordId: '0123456789abcdefgh', raw, reason, path });
    expect(error.context).toEqual({ id: '0123456789abcdefgh', raw, reason, path });
    expect(error.message).toBe(
      `meeting-logs 0123456789abcdefgh: ${reason}. The service sent this record (GET ${path}) in a shape the spec does ` +
        "not allow, so it cannot be mirrored as it is; retrying will not change it. Report it to the service's owner " +
        "with the record's id.",
    );
  });
});
