/**
 * One attempt on the wire: the URL built, the key's Authorization header set, one got request, its body read into
 * a buffer of the client's pool, and a failure to get an answer mapped to an `AttemptFailure`. No retries (got's
 * `retry.limit` is 0): the request loop owns them.
 */
import got, { RequestError, TimeoutError, type Got, type Request, type Response } from 'got';
import type { BodyPool } from './body-pool.js';
import type { KeyPool } from './keys.js';
import type { RawResponse, RequestSpec } from './request.js';
import type { AttemptFailure } from './retry.js';

/** What one attempt came to: an answer (any status), or no usable answer at all. */
export type SentAttempt =
  /** `release`: gives the body's buffer back to the pool, once the answer has been read (see RawResponse.body). */
  | { response: RawResponse; release: () => void }
  /** `answered`: the status and headers of an answer whose body broke off, for the limiter to see all the same. */
  | { failure: AttemptFailure; answered?: { status: number; headers: Response['headers'] } };

/** The got instance every attempt of one client goes out on. */
export function createHttp(timeoutMs: number): Got {
  return got.extend({
    // Authorization is set per request: each attempt goes out on the key the limiter granted.
    headers: {
      accept: 'application/json',
      'user-agent': 'salesync',
    },
    retry: { limit: 0 },
    throwHttpErrors: false,
    // The service never redirects; following one could carry the Authorization header somewhere else.
    followRedirect: false,
    timeout: { request: timeoutMs },
  });
}

/** Sends `spec` once on `keyId`, its body read into `bodies`. Rejects only with the signal's reason, once it fired. */
export async function sendAttempt(
  http: Got,
  bodies: BodyPool,
  prefix: string,
  spec: RequestSpec<unknown>,
  keys: Pick<KeyPool, 'secretOf'>,
  keyId: string,
): Promise<SentAttempt> {
  const url = new URL(prefix + spec.path);
  for (const [name, value] of Object.entries(spec.query ?? {})) {
    if (value !== null && value !== undefined) url.searchParams.set(name, String(value));
  }
  try {
    // A stream, not got's buffered body: that would concatenate each answer into a fresh buffer.
    const stream = http.stream(url, {
      method: spec.method,
      headers: { authorization: `Bearer ${keys.secretOf(keyId)}` },
      ...(spec.body === undefined ? {} : { json: spec.body }),
      ...(spec.signal ? { signal: spec.signal } : {}),
    });
    // got's stream leaves a request that may have a body open for one to be written: a POST without one ends here.
    if (spec.body === undefined && spec.method !== 'GET') stream.end();
    return await readBody(stream, bodies);
  } catch (error) {
    if (spec.signal?.aborted) throw spec.signal.reason;
    // Only the code is read: got's errors carry the request options, the Authorization header included.
    if (error instanceof TimeoutError) return { failure: { kind: 'timeout' } };
    if (error instanceof RequestError) {
      const failure: AttemptFailure = { kind: 'network', networkCode: error.code };
      return error.response ? { failure, answered: { status: error.response.statusCode, headers: error.response.headers } } : { failure };
    }
    const name = error instanceof Error ? error.name : typeof error;
    return { failure: { kind: 'network', networkCode: `ERR_UNEXPECTED_${name}` } };
  }
}

/** The answer on `stream`, its body in a buffer lent by `bodies`; rejects with got's error, the buffer given back. */
function readBody(stream: Request, bodies: BodyPool): Promise<{ response: RawResponse; release: () => void }> {
  const body = bodies.lend();
  return new Promise((resolve, reject) => {
    let settled = false;
    stream.on('data', (chunk: Buffer) => body.append(chunk));
    // `on`, not `once`: an error after the end (a socket reset) must find a listener, and leaves the body alone.
    stream.on('error', (error) => {
      if (settled) return;
      settled = true;
      body.release();
      reject(error);
    });
    stream.once('end', () => {
      settled = true;
      // As got's promise API does once a body is read: its timeout and its listener on the signal go.
      stream.destroy();
      const { statusCode, headers } = stream.response!;
      resolve({ response: { status: statusCode, headers, body: body.bytes }, release: () => body.release() });
    });
  });
}
