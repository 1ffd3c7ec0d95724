/**
 * What `npm pack` ships is whole: installed into an empty directory (from npm's cache, as `npm ci` left it), the
 * package's own `salesync` answers `--help` and runs the demo, Lua scripts, schema files and all.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/core/paths.js';

const run = promisify(execFile);
const root = projectRoot(import.meta.url);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'salesync-pack-'));
  // The build is already there (`npm test` builds first): no scripts, so other tests' dist/ is left alone.
  const packed = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], { cwd: root });
  const tarball = join(dir, packed.stdout.trim().split('\n').pop()!);
  await run('npm', ['init', '-y'], { cwd: dir });
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--omit=dev', tarball], { cwd: dir, timeout: 240_000 });
}, 300_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('installs into an empty directory and its salesync answers --help', async () => {
    const help = await run(join(dir, 'node_modules', '.bin', 'salesync'), ['--help'], { cwd: dir });
    expect(help.stdout).toMatch(/Usage: salesync/);
    expect(help.stdout).toMatch(/dbt-sources/);
  });

  it('runs the demo end to end from the install alone: schema files and the simulator ship with it', async () => {
    const demo = await run(join(dir, 'node_modules', '.bin', 'salesync'), ['demo'], {
      cwd: dir,
      timeout: 120_000,
      env: { PATH: process.env.PATH ?? '', HOME: dir },
    });
    expect(demo.stdout).toMatch(/Query it yourself/);
    expect(await readdir(join(dir, 'data'))).toContain('demo.duckdb');
  }, 150_000);

  it("reads the shared limiter's Lua scripts from the install itself", async () => {
    const limiter = join(dir, 'node_modules', 'salesync', 'dist', 'src', 'limiter', 'redis-limiter.js');
    const script = `import('${limiter}').then((m) => console.log(m.readLimiterScript('acquire.lua').length))`;
    const read = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: dir });
    expect(Number(read.stdout.trim())).toBeGreaterThan(100);
  });
});
