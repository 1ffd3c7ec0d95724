/**
 * `salesync status | head -1`, `salesync query … | head`: a reader that leaves early ends the command quietly,
 * exit 141 (128 + SIGPIPE, as `seq | head` reports), never a Node stack trace or an `internal` failure line.
 * Runs the built CLI with its stdout piped to this process, which closes its end as `head` would.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cliEnv } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({
    seed: 3203,
    size: { deals: 10, companies: 2, contacts: 2, meetingLogs: 1, contactActivities: 1, users: 2 },
  });
  expect((await harness.sync()).ok).toBe(true);
});
afterAll(async () => {
  await harness?.close();
});

/**
 * Run the CLI with stdout read by a reader that closes the pipe `after` its first line, or before it reads
 * anything (`head -0`); the run's code and everything it said on stderr.
 */
function runIntoClosingReader(
  args: string[],
  after: 'first line' | 'nothing',
): Promise<{ code: number | null; signal: NodeJS.Signals | null; firstLine: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...cliEnv(harness) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let seen = '';
    let stderr = '';
    if (after === 'nothing') child.stdout.destroy();
    else {
      child.stdout.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('\n')) child.stdout.destroy();
      });
    }
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // A regression that hangs instead of ending is killed, and the test fails on its code.
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, firstLine: seen.split('\n')[0] ?? '', stderr });
    });
  });
}

describe('a reader that closes the pipe early', () => {
  it('`query` of many rows (far more than a pipe holds) piped to `head -1`: exit 141, nothing on stderr', async () => {
    for (const json of [false, true]) {
      const args = ['query', "SELECT range AS n, repeat('x', 40) AS pad FROM range(9000)", ...(json ? ['--json'] : [])];
      const run = await runIntoClosingReader(args, 'first line');
      expect(run.firstLine.length, `json: ${json}`).toBeGreaterThan(0);
      expect(run.stderr, `json: ${json}`).toBe('');
      expect(run.code, `json: ${json}`).toBe(141);
    }
  }, 60_000);

  it('`status --json` on a synced warehouse into a reader already gone: exit 141, nothing on stderr', async () => {
    const run = await runIntoClosingReader(['status', '--json'], 'nothing');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(141);
  });
});
