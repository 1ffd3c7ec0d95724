import { describe, expect, it } from 'vitest';
import { SalesApiError } from '../../src/api/errors.js';
import { fewerDigits, updatedAfterWith } from '../../src/api/updated-after.js';

const WATERMARK = '2024-05-02T10:20:30.123456Z';

function refusal(status: number, fields: string[] = []): SalesApiError {
  return new SalesApiError({
    status,
    body: '',
    method: 'GET',
    path: '/v1/deals/',
    code: status === 400 ? (fields.length > 0 ? 'validation_error' : 'invalid_request') : 'not_found',
    serviceMessage: null,
    fields: fields.map((name) => ({ name, code: 'invalid_value', message: '' })),
    keyFingerprint: 'sk_…00000000',
    attempts: 1,
  });
}

describe('updated_after sent with fewer fraction digits once the service refuses them', () => {
  it('floors, never rounds: no record is left out', () => {
    expect(updatedAfterWith(WATERMARK, 6)).toBe(WATERMARK);
    expect(updatedAfterWith(WATERMARK, 3)).toBe('2024-05-02T10:20:30.123Z');
    expect(updatedAfterWith(WATERMARK, 0)).toBe('2024-05-02T10:20:30Z');
    expect(updatedAfterWith('2024-05-02T19:20:30.999999+09:00', 0)).toBe('2024-05-02T10:20:30Z');
    expect(updatedAfterWith('1969-12-31T23:59:59.999999Z', 3)).toBe('1969-12-31T23:59:59.999Z');
  });

  it('steps from six digits to three to none on a 400 naming updated_after, and no further', () => {
    const sent = { updatedAfter: WATERMARK, after: 'cursor' };
    expect(fewerDigits(refusal(400, ['updated_after']), sent, 6)).toBe(3);
    expect(fewerDigits(refusal(400, ['updated_after']), sent, 3)).toBe(0);
    expect(fewerDigits(refusal(400, ['updated_after']), sent, 0)).toBeNull();
    expect(fewerDigits(refusal(400, ['query.updated_after']), sent, 6)).toBe(3);
    expect(fewerDigits(refusal(400, ['updated_after_max']), sent, 6)).toBeNull();
    // Each step sends another text: a watermark on a whole second goes …30.000Z, then …30Z.
    const whole = { updatedAfter: '2024-05-02T10:20:30.000000Z' };
    expect(fewerDigits(refusal(400, ['updated_after']), whole, 6)).toBe(3);
    expect(fewerDigits(refusal(400, ['updated_after']), whole, 3)).toBe(0);
  });

  it("takes a first page's 400 naming no field for a refused format, not a later page's (its cursor's) nor another field's", () => {
    expect(fewerDigits(refusal(400), { updatedAfter: WATERMARK }, 6)).toBe(3);
    expect(fewerDigits(refusal(400), { updatedAfter: WATERMARK, after: 'cursor' }, 6)).toBeNull();
    expect(fewerDigits(refusal(400, ['page_size']), { updatedAfter: WATERMARK }, 6)).toBeNull();
    expect(fewerDigits(refusal(404), { updatedAfter: WATERMARK }, 6)).toBeNull();
    expect(fewerDigits(refusal(400, ['updated_after']), { updatedAfter: null }, 6)).toBeNull();
    expect(fewerDigits(new Error('network'), { updatedAfter: WATERMARK }, 6)).toBeNull();
  });
});
