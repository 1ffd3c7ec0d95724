import { describe, expect, it } from 'vitest';
import { SalesyncError } from '../../src/core/errors.js';
import { readAnswer, statusFailure } from '../../src/api/read-answer.js';
import type { RawResponse, RequestSpec } from '../../src/api/request.js';
import type { Checked } from '../../src/api/validation.js';

const answer = (status: number, body: string, headers: RawResponse['headers'] = {}): RawResponse => ({
  status,
  body: Buffer.from(body),
  headers,
});

/** A spec whose check takes any object with `ok: true` in it. */
const spec = (extra: Partial<RequestSpec<unknown>> = {}): RequestSpec<unknown> => ({
  method: 'GET',
  path: '/v1/deals/',
  check: (json): Checked<unknown> =>
    (json as { ok?: unknown }).ok === true ? { ok: true, data: json } : { ok: false, detail: 'ok: expected true' },
  ...extra,
});

describe('statusFailure', () => {
  it('reads a 429 as rate limited, with the Retry-After it was given', () => {
    expect(statusFailure(answer(429, ''), 2000)).toEqual({ kind: 'rate_limited', retryAfterMs: 2000 });
  });

  it('decides retriable by the error code, and by the status when there is no envelope', () => {
    const envelope = (code: string) => JSON.stringify({ error: { code, message: 'エラー' } });
    expect(statusFailure(answer(500, envelope('validation_error')), null)).toEqual({ kind: 'status', status: 500, retriable: false });
    expect(statusFailure(answer(502, '<html>bad gateway</html>'), null)).toEqual({ kind: 'status', status: 502, retriable: true });
    expect(statusFailure(answer(404, ''), null)).toEqual({ kind: 'status', status: 404, retriable: false });
  });
});

describe('readAnswer', () => {
  it('hands out the checked data of a 2xx with its Date header as the server date', async () => {
    const read = await readAnswer(spec(), answer(200, '{"ok":true}', { date: 'Wed, 01 May 2024 09:30:00 GMT' }), null, 'sk_…0000');
    expect(read).toEqual({ kind: 'data', data: { ok: true }, serverDate: '2024-05-01T09:30:00Z' });
  });

  it('tells a body that is not JSON from JSON that breaks the check', async () => {
    expect(await readAnswer(spec(), answer(200, '{"ok":tr'), null, 'sk_…0000')).toMatchObject({
      kind: 'failed',
      failure: { kind: 'invalid_body' },
      invalidJson: true,
    });
    expect(await readAnswer(spec(), answer(200, '{"ok":false}'), null, 'sk_…0000')).toEqual({
      kind: 'failed',
      failure: { kind: 'invalid_body', detail: 'ok: expected true' },
      invalidJson: false,
    });
  });

  it("reads the service's error envelope in a 2xx as that error, by its code, and never as a record to check", async () => {
    const envelope = (code: string) => JSON.stringify({ error: { code, message: 'エラー' } });
    const refuseAll = spec({ check: () => ({ ok: false, error: new SalesyncError('invalid_record', 'not a record') }) });
    expect(await readAnswer(refuseAll, answer(200, envelope('internal_error')), null, 'sk_…0000')).toEqual({
      kind: 'failed',
      failure: { kind: 'status', status: 200, retriable: true },
      invalidJson: false,
    });
    expect(await readAnswer(refuseAll, answer(200, envelope('not_found')), null, 'sk_…0000')).toEqual({
      kind: 'failed',
      failure: { kind: 'status', status: 200, retriable: false },
      invalidJson: false,
    });
    // A body with more than the envelope is the endpoint's answer, checked as such.
    expect(
      await readAnswer(spec(), answer(200, '{"ok":true,"error":{"code":"internal_error","message":""}}'), null, 'sk_…0000'),
    ).toMatchObject({
      kind: 'data',
    });
  });

  it("returns the check's own error, to be thrown at once rather than retried", async () => {
    const error = new SalesyncError('invalid_record', 'the record breaks its schema');
    expect(await readAnswer(spec({ check: () => ({ ok: false, error }) }), answer(200, '{}'), null, 'sk_…0000')).toEqual({
      kind: 'refused',
      error,
    });
  });

  it('shows a 2xx body to onText before parsing it and, once that sent a request, lets a turn pass and skips onJson', async () => {
    const seen: string[] = [];
    const watched = (sent: boolean) =>
      spec({
        onText: (text) => (seen.push(`onText ${text}`), sent && setImmediate(() => seen.push('a turn')), sent),
        onJson: () => (seen.push('onJson'), false),
        check: (json) => (seen.push('check'), { ok: true, data: json }),
      });
    await readAnswer(watched(true), answer(200, '{}'), null, 'sk_…0000');
    expect(seen).toEqual(['onText {}', 'a turn', 'check']);
    seen.length = 0;
    await readAnswer(watched(false), answer(200, '{}'), null, 'sk_…0000');
    await readAnswer(watched(true), answer(503, '{}'), null, 'sk_…0000');
    expect(seen).toEqual(['onText {}', 'onJson', 'check']);
  });

  it('shows a parsed 2xx body to onJson before checking it, and a non-2xx body never', async () => {
    const seen: string[] = [];
    const watched = spec({
      onJson: () => (seen.push('onJson'), false),
      check: (json) => (seen.push('check'), { ok: true, data: json }),
    });
    await readAnswer(watched, answer(200, '{}'), null, 'sk_…0000');
    await readAnswer(watched, answer(503, '{}'), null, 'sk_…0000');
    expect(seen).toEqual(['onJson', 'check']);
  });
});
