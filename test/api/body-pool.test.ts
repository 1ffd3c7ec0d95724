import { afterEach, describe, expect, it, vi } from 'vitest';
import { BodyPool } from '../../src/api/body-pool.js';
import { createSalesApi } from '../../src/api/index.js';
import { SalesyncError } from '../../src/core/errors.js';
import {
  TEST_KEY,
  capturedLogger,
  errorBody,
  listBody,
  record,
  recordId,
  recordingLimiter,
  rejectionOf,
  sendJson,
  startFakeService,
  type FakeService,
  type Handler,
} from './fake-service.js';

describe('BodyPool', () => {
  it('lends each body out at once a buffer of its own, and reuses one given back', () => {
    const pool = new BodyPool(16);
    const earlier = pool.lend();
    earlier.append(Buffer.from('{}'));
    earlier.release();
    const first = pool.lend();
    const second = pool.lend();
    first.append(Buffer.from('{"page":1}'));
    second.append(Buffer.from('{"page":2}'));
    expect(first.bytes.buffer).not.toBe(second.bytes.buffer);
    expect([first.bytes.toString(), second.bytes.toString()]).toEqual(['{"page":1}', '{"page":2}']);
    const firstBuffer = first.bytes.buffer;
    first.release();
    const third = pool.lend();
    third.append(Buffer.from('{"page":3}'));
    expect(third.bytes.buffer).toBe(firstBuffer);
    expect(second.bytes.toString()).toBe('{"page":2}');
  });

  it('doubles a buffer a body outgrows, keeping its bytes, and keeps the grown one', () => {
    const pool = new BodyPool(4);
    const body = pool.lend();
    body.append(Buffer.from('abc'));
    body.append(Buffer.from('defghijkl'));
    expect(body.bytes.toString()).toBe('abcdefghijkl');
    // 4 doubled until 12 bytes fit.
    expect(body.bytes.buffer.byteLength).toBe(16);
    body.release();
    const next = pool.lend();
    next.append(Buffer.from('x'));
    expect(next.bytes.buffer.byteLength).toBe(16);
  });

  it('keeps at most `keep` idle buffers, none larger than `keepBytes`', () => {
    const pool = new BodyPool(8, 2, 16);
    const bodies = [1, 2, 3].map(() => pool.lend());
    for (const body of bodies) body.append(Buffer.from('12345678'));
    for (const body of bodies) body.release();
    expect(pool.idle).toBe(2);
    const outsized = pool.lend();
    outsized.append(Buffer.alloc(17));
    outsized.release();
    expect(pool.idle).toBe(1);
  });

  it('gives a buffer back once however often its body is released, and refuses the body afterwards', () => {
    const pool = new BodyPool(8);
    const body = pool.lend();
    body.append(Buffer.from('{}'));
    body.release();
    body.release();
    expect(pool.idle).toBe(1);
    const [a, b] = [pool.lend(), pool.lend()];
    a.append(Buffer.from('a'));
    b.append(Buffer.from('b'));
    expect(a.bytes.buffer).not.toBe(b.bytes.buffer);
    expect(() => body.bytes).toThrow(SalesyncError);
    expect(() => body.append(Buffer.from('x'))).toThrow(SalesyncError);
  });

  it('takes no buffer for a body without bytes', () => {
    const pool = new BodyPool(8);
    const body = pool.lend();
    expect(body.bytes).toHaveLength(0);
    body.release();
    expect(pool.idle).toBe(0);
  });
});

describe("the client's pooled bodies", () => {
  const services: FakeService[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    await Promise.all(services.splice(0).map((s) => s.close()));
  });

  /** Every buffer the client's pool hands out and takes back; each one scribbled over as it comes back. */
  function watchPool(): { taken: Buffer[]; given: Buffer[] } {
    const watched = { taken: [] as Buffer[], given: [] as Buffer[] };
    const { take, give } = BodyPool.prototype;
    vi.spyOn(BodyPool.prototype, 'take').mockImplementation(function (this: BodyPool) {
      const buffer = take.call(this);
      watched.taken.push(buffer);
      return buffer;
    });
    vi.spyOn(BodyPool.prototype, 'give').mockImplementation(function (this: BodyPool, buffer: Buffer) {
      // As the next answer would: anything still reading this buffer sees bytes that are not its answer's.
      buffer.fill(0);
      watched.given.push(buffer);
      give.call(this, buffer);
    });
    return watched;
  }

  async function setup(handler: Handler): Promise<ReturnType<typeof createSalesApi>> {
    const service = await startFakeService(handler);
    services.push(service);
    return createSalesApi({
      baseUrl: service.baseUrl,
      apiKey: TEST_KEY,
      limiter: recordingLimiter(),
      logger: capturedLogger().logger,
      retry: { limit: 1, baseDelayMs: 1, maxDelayMs: 2 },
      timeoutMs: 300,
    });
  }

  /** A page of `n` records of non-Latin text: large enough to be parsed in groups (parseJsonBytes). */
  const page = (from: number, n: number): Record<string, unknown>[] =>
    Array.from({ length: n }, (_, i) => record(recordId(from + i), { name: `商談 ${from + i} ${'東京都千代田区'.repeat(40)}` }));

  it("keeps an answer's data whole once its buffer took the next answer's bytes", async () => {
    const records = [page(1, 1)[0]!, page(2, 1)[0]!];
    const api = await setup((req, res) => sendJson(res, 200, records[Number(req.path.split('/')[3]!.slice(1)) - 1]));
    const watched = watchPool();
    const first = await api.getRecord('deals', recordId(1));
    const second = await api.getRecord('deals', recordId(2));
    // One buffer took both answers: the second overwrote the first's bytes (and was scribbled over in turn).
    expect(watched.taken).toHaveLength(2);
    expect(watched.taken[1]).toBe(watched.taken[0]);
    expect(first).toEqual(records[0]);
    expect(second).toEqual(records[1]);
  });

  it('reads every page of a walk reading ahead from its own buffer before giving it back', async () => {
    const pages = [page(1, 200), page(201, 200), page(401, 200), page(601, 3)];
    const api = await setup((req, res) => {
      const n = Number(req.query.get('after') ?? '0');
      sendJson(res, 200, listBody(pages[n]!, n + 1 < pages.length ? String(n + 1) : null));
    });
    const watched = watchPool();
    const walked: unknown[][] = [];
    for await (const listed of api.listPages('deals')) walked.push(listed.results);
    expect(walked).toEqual(pages);
    // Read while lent, given back once read: the buffers went round, and not one stayed out.
    expect(new Set(watched.taken).size).toBeLessThan(watched.taken.length);
    expect(watched.given).toHaveLength(watched.taken.length);
  });

  it.each<[string, Handler, string]>([
    ['an error answer', (_req, res) => sendJson(res, 500, errorBody('internal_error', 'サーバーエラー')), 'internal_error'],
    [
      'a body broken off after its headers',
      (_req, res) => {
        res.writeHead(200, { 'content-length': '1000' });
        res.write('{"id":');
        setTimeout(() => res.socket?.destroy(), 10);
      },
      'service_unreachable',
    ],
    [
      'a body that times out',
      (_req, res) => {
        res.writeHead(200);
        res.write('{"id":');
      },
      'timeout',
    ],
  ])('gives back the buffer of %s, its error read from it first', async (_, handler, code) => {
    const api = await setup(handler);
    const watched = watchPool();
    const error = await rejectionOf(api.getRecord('deals', recordId(1)));
    expect(error).toMatchObject({ code });
    // The service's own message, decoded from the body before its buffer went back.
    if (code === 'internal_error') expect(error).toMatchObject({ serviceMessage: 'サーバーエラー' });
    expect(watched.taken).toHaveLength(2);
    expect(watched.given).toHaveLength(watched.taken.length);
  });

  it('gives back the buffer of a body the caller aborted', async () => {
    const api = await setup((_req, res) => {
      res.writeHead(200);
      res.write('{"id":');
    });
    const watched = watchPool();
    const controller = new AbortController();
    const reason = new Error('stopped');
    const read = api.getRecord('deals', recordId(1), controller.signal);
    await expect.poll(() => watched.taken.length).toBe(1);
    controller.abort(reason);
    expect(await rejectionOf(read)).toBe(reason);
    expect(watched.given).toHaveLength(1);
  });
});
