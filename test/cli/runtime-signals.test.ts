import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, failureLine } from '../../src/cli/runtime.js';
import { SalesyncError } from '../../src/core/errors.js';

/** A stream that keeps what is written (stands for stdout / stderr). */
function capture(): NodeJS.WriteStream & { text(): string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  }) as unknown as NodeJS.WriteStream & { text(): string };
  stream.text = () => text;
  return stream;
}

// The runner's own signal listeners are set aside: these tests emit SIGTERM/SIGINT to the runtime's alone.
let saved: { SIGINT: NodeJS.SignalsListener[]; SIGTERM: NodeJS.SignalsListener[] };
beforeEach(() => {
  saved = { SIGINT: process.listeners('SIGINT'), SIGTERM: process.listeners('SIGTERM') };
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
});
afterEach(() => {
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  for (const l of saved.SIGINT) process.on('SIGINT', l);
  for (const l of saved.SIGTERM) process.on('SIGTERM', l);
});

async function runtimeWithExits(stopGraceMs: number) {
  const exits: number[] = [];
  const stderr = capture();
  const runtime = await createRuntime({
    env: { LOG_LEVEL: 'silent' },
    overrides: {},
    stdout: capture(),
    stderr,
    progress: false,
    stopGraceMs,
    exit: (code) => exits.push(code),
  });
  return { runtime, exits, stderr };
}

describe('SIGINT and SIGTERM', () => {
  it('the first signal aborts the command; one that has not stopped within the grace is ended with exit 130 and one line', async () => {
    const { runtime, exits, stderr } = await runtimeWithExits(200);
    process.emit('SIGTERM', 'SIGTERM');
    expect(runtime.signal.aborted).toBe(true);
    expect(exits).toEqual([]);
    await sleep(400);
    expect(exits).toEqual([130]);
    expect(stderr.text()).toMatch(/^salesync: interrupted: stopped by SIGTERM, ending after 0s without waiting further[^\n]*\n$/);
    runtime.close();
  });

  it('a second signal ends the command at once with exit 130', async () => {
    const { runtime, exits, stderr } = await runtimeWithExits(60_000);
    process.emit('SIGINT', 'SIGINT');
    expect(exits).toEqual([]);
    process.emit('SIGINT', 'SIGINT');
    expect(exits).toEqual([130]);
    expect(stderr.text()).toMatch(/^salesync: interrupted: stopped at once by a second SIGINT/);
    runtime.close();
  });

  it('a command that stops within the grace is not ended by it', async () => {
    const { runtime, exits } = await runtimeWithExits(100);
    process.emit('SIGTERM', 'SIGTERM');
    runtime.close();
    await sleep(250);
    expect(exits).toEqual([]);
  });
});

describe('the terminal logger', () => {
  it('redacts keys in the lines it writes above the live display, as the JSON logger does', async () => {
    const stderr = capture();
    const runtime = await createRuntime({
      env: { LOG_LEVEL: 'info' },
      overrides: {},
      stdout: capture(),
      stderr,
      progress: true,
      exit: () => undefined,
    });
    const secret = 'sk_TerminalSecret000000000000000000000000000001';
    runtime.logger.warn({ apiKey: secret, request: { headers: { authorization: `Bearer ${secret}` } } }, 'a warning with a key attached');
    runtime.close();
    expect(stderr.text()).toContain('a warning with a key attached');
    expect(stderr.text()).not.toContain(secret);
  });
});

describe('the failure line', () => {
  it('redacts anything shaped like a key, whatever message carries it, and keeps fingerprints', () => {
    const line = failureLine(new SalesyncError('boom', 'got sk_Secret1234567890abcdefXYZ from\nsomewhere; key sk_…1a2b3c4d was used'));
    expect(line).toBe('salesync: boom: got sk_…(redacted) from somewhere; key sk_…1a2b3c4d was used');
  });
});
