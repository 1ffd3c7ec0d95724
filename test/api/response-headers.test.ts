import { describe, expect, it } from 'vitest';
import { rateLimitObservation, retryAfterOf, serverDateOf } from '../../src/api/response-headers.js';

const serverDate = 'Wed, 01 May 2024 09:30:00 GMT';
const serverMs = Date.parse(serverDate);

describe('rateLimitObservation', () => {
  it('moves the reset from the server clock onto ours by the Date header', () => {
    const localNow = serverMs + 30 * 60_000; // our clock runs 30 minutes ahead
    const observation = rateLimitObservation(
      { 'x-ratelimit-limit': '1000', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(serverMs / 1000 + 5), date: serverDate },
      localNow,
    );
    expect(observation).toEqual({ limit: 1000, remaining: 0, resetAt: (localNow + 5000) / 1000 });
  });

  it('reads a negative remaining (a window overdrawn) as a spent one', () => {
    expect(rateLimitObservation({ 'x-ratelimit-remaining': '-3' }).remaining).toBe(0);
  });

  it('keeps the reset as given without a Date header, and leaves missing or unreadable headers undefined', () => {
    expect(rateLimitObservation({ 'x-ratelimit-reset': '1700000000', 'x-ratelimit-remaining': 'soon', 'x-ratelimit-limit': ' ' })).toEqual({
      limit: undefined,
      remaining: undefined,
      resetAt: 1700000000,
    });
  });
});

describe('retryAfterOf', () => {
  it("reads only a rate-limited answer's Retry-After", () => {
    expect(retryAfterOf(true, { 'retry-after': '3' }, 0)).toBe(3000);
    expect(retryAfterOf(false, { 'retry-after': '3' }, 0)).toBeNull();
  });

  it("reads an HTTP-date Retry-After against the server's Date, not the local clock", () => {
    const later = new Date(serverMs + 4000).toUTCString();
    expect(retryAfterOf(true, { 'retry-after': later, date: serverDate }, serverMs + 3_600_000)).toBe(4000);
  });
});

describe('serverDateOf', () => {
  it('gives the Date header as ISO 8601 UTC, or null', () => {
    expect(serverDateOf({ date: serverDate })).toBe('2024-05-01T09:30:00Z');
    expect(serverDateOf({})).toBeNull();
  });
});
