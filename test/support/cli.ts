import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';
import { DEFAULT_KEYS } from '../../src/simulator/index.js';
import type { Harness } from './harness.js';

/** The built CLI: tests that need a real process (exit codes, stderr, SIGKILL) run it. `npm test` builds first. */
export const CLI = join(projectRoot(import.meta.url), 'dist', 'src', 'cli', 'main.js');

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The CLI process's pid (what `sync_runs.pid` records). */
  pid: number | null;
  stdout: string;
  stderr: string;
}

/** Run the CLI with exactly `env` (plus PATH and HOME); `onStart` gets a way to SIGKILL it, and its stdout (the log lines) so far. */
export function runCli(
  args: string[],
  env: Record<string, string>,
  onStart?: (kill: () => void, stdout: () => string) => void,
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, pid: child.pid ?? null, stdout, stderr }));
    onStart?.(
      () => child.kill('SIGKILL'),
      () => stdout,
    );
  });
}

/** The environment that points the CLI at a harness's simulator and warehouse, at its high test limits. */
export function cliEnv(h: Harness, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SALES_API_BASE_URL: h.url,
    SALES_API_KEY: DEFAULT_KEYS.read,
    WAREHOUSE_PATH: h.config.warehousePath,
    SALES_API_RATE_LIMIT: '600000',
    SALES_API_ORG_RATE_LIMIT: '3000000',
    ...extra,
  };
}
