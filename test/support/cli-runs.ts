import { spawn } from 'node:child_process';
import { expect } from 'vitest';
import { CLI, runCli, type CliRun } from './cli.js';

/**
 * runCli, killed if it runs past `withinMs`: a hang fails the test saying so instead of timing the suite out.
 * `onStart` gets the run's stdout (its log lines) so far.
 */
export async function runCliWithin(
  args: string[],
  env: Record<string, string>,
  withinMs = 120_000,
  onStart?: (stdout: () => string) => void,
): Promise<CliRun> {
  let timer: NodeJS.Timeout | undefined;
  const run = await runCli(args, env, (kill, stdout) => {
    timer = setTimeout(kill, withinMs);
    onStart?.(stdout);
  });
  clearTimeout(timer);
  expect(run.signal, `salesync ${args.join(' ')} still running after ${withinMs} ms`).toBeNull();
  return run;
}

/**
 * The CLI under `ulimit -f <kib>` (bash counts 1024-byte blocks): every file it writes stops growing at that size,
 * as on a full disk. Node ignores SIGXFSZ, so the write fails with EFBIG ("File too large") instead of killing it.
 */
export function runCliWithFileSizeLimit(kib: number, args: string[], env: Record<string, string>, withinMs = 120_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `ulimit -f ${kib} && exec "$@"`, 'bash', process.execPath, CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), withinMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, pid: child.pid ?? null, stdout, stderr }); // bash execs the CLI: one pid
    });
  });
}

/** What an operator must see when a run fails: exit 1 (or `exitCode`), ONE line `salesync: <code>: ...`, no stack trace. */
export function expectOneLineFailure(run: CliRun, code: string, exitCode = 1): string {
  expect(run.signal, 'the run was killed, not failed').toBeNull();
  expect(run.code, run.stderr).toBe(exitCode);
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines, `stderr should be one line:\n${run.stderr}`).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`^salesync: ${code}: \\S`));
  // No stack trace anywhere: not on stderr, not inside a JSON log line on stdout.
  expect(run.stderr + run.stdout).not.toMatch(/(\n|\\n)\s+at .+:\d+:\d+/);
  return lines[0]!;
}
