import { afterEach, describe, expect, it } from 'vitest';
import { BodyPool } from '../../src/api/body-pool.js';
import { createHttp, sendAttempt } from '../../src/api/send-attempt.js';
import { TEST_KEY, sendJson, startFakeService, type FakeService } from './fake-service.js';

const services: FakeService[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.close()));
});

describe('sendAttempt', () => {
  it('sends a POST without a body at once, as an empty one, rather than waiting for one to be written', async () => {
    const service = await startFakeService((_req, res) => sendJson(res, 200, { ok: true }));
    services.push(service);
    const sent = await sendAttempt(
      createHttp(2_000),
      new BodyPool(),
      service.baseUrl,
      { method: 'POST', path: '/v1/deals/search/', check: () => ({ ok: true, data: null }) },
      { secretOf: () => TEST_KEY },
      'key',
    );
    expect(sent).toMatchObject({ response: { status: 200 } });
    expect(service.requests).toMatchObject([{ method: 'POST', body: '', headers: { 'content-length': '0' } }]);
  });
});
