/**
 * DuckDB's allocator returns freed pages within 100 ms and without MADV_FREE, which Linux keeps counting in RSS: the
 * CLI sets `DUCKDB_JE_MALLOC_CONF` before a command loads DuckDB, and an operator's own conf still wins.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DUCKDB_ALLOCATOR_CONF, duckdbAllocatorConf } from '../../src/warehouse/allocator-conf.js';
import { withDatabase } from '../../src/warehouse/connection.js';
import { runCli } from '../support/cli.js';

describe('duckdbAllocatorConf', () => {
  it('is the fast-returning conf when the operator sets none', () => {
    expect(duckdbAllocatorConf(undefined)).toBe(DUCKDB_ALLOCATOR_CONF);
    expect(duckdbAllocatorConf('  ')).toBe(DUCKDB_ALLOCATOR_CONF);
    expect(DUCKDB_ALLOCATOR_CONF).toBe('dirty_decay_ms:100,muzzy_decay_ms:0');
  });

  it("puts an operator's conf after its own, so the operator's value of a key is the one jemalloc keeps", () => {
    expect(duckdbAllocatorConf('dirty_decay_ms:5000')).toBe(`${DUCKDB_ALLOCATOR_CONF},dirty_decay_ms:5000`);
  });

  it('leaves a conf it already made as it is, so a child of a process that set it runs with the same', () => {
    const once = duckdbAllocatorConf('dirty_decay_ms:5000');
    expect(duckdbAllocatorConf(once)).toBe(once);
    expect(duckdbAllocatorConf(DUCKDB_ALLOCATOR_CONF)).toBe(DUCKDB_ALLOCATOR_CONF);
  });
});

// DuckDB is built with jemalloc on Linux only; elsewhere it uses the system allocator and prints no stats.
describe.runIf(process.platform === 'linux')("the CLI's DuckDB allocator", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'salesync-allocator-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** jemalloc's own options as it printed them at exit (`stats_print`, JSON). */
  function jemallocOptions(stderr: string): { dirty: number; muzzy: number } {
    const opt = /"opt":\{.*?"dirty_decay_ms":(-?\d+),"muzzy_decay_ms":(-?\d+)/s.exec(stderr);
    if (!opt) throw new Error(`no jemalloc stats on stderr: ${stderr.slice(0, 300)}`);
    return { dirty: Number(opt[1]), muzzy: Number(opt[2]) };
  }

  it("a command's DuckDB returns freed pages within 100 ms and not lazily; an operator's own keys win", async () => {
    const path = join(dir, 'w.duckdb');
    await withDatabase({ path, access: 'write', lockTimeoutMs: 1000 }, async () => undefined);
    const stats = 'stats_print:true,stats_print_opts:J';

    const ours = await runCli(['query', 'SELECT 1 AS one'], { WAREHOUSE_PATH: path, DUCKDB_JE_MALLOC_CONF: stats });
    expect(ours.code).toBe(0);
    expect(jemallocOptions(ours.stderr)).toEqual({ dirty: 100, muzzy: 0 });

    const operators = await runCli(['query', 'SELECT 1 AS one'], {
      WAREHOUSE_PATH: path,
      DUCKDB_JE_MALLOC_CONF: `${stats},dirty_decay_ms:5000`,
    });
    expect(operators.code).toBe(0);
    expect(jemallocOptions(operators.stderr)).toEqual({ dirty: 5000, muzzy: 0 });
  });
});
