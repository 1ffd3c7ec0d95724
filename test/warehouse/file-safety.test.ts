/**
 * What the warehouse does about the file system: the WAL beside the file is as private as the file, and a full
 * disk (or a quota, or a file-size limit) is reported under a code of its own. The chaos suite
 * (test/chaos/faults.chaos.test.ts) runs a real sync into a full disk; this file pins the pieces.
 */
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, statSync, writev } from 'node:fs';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SalesyncError } from '../../src/core/errors.js';
import { isDiskFull, warehouseFailure } from '../../src/warehouse/connection.js';
import { openWarehouse } from '../../src/warehouse/index.js';
import { openSpillFile } from '../../src/warehouse/staging.js';

const writeChunks = promisify(writev);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-file-safety-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('warehouse files', () => {
  it('creates the WAL owner-only (0600) like the file, even under the usual umask 022', async () => {
    // Under 022 DuckDB's 0666 would leave the WAL world-readable while it holds the same rows as the file.
    const previous = process.umask(0o022);
    const warehouse = openWarehouse({ path: join(dir, 'w.duckdb'), lockTimeoutMs: 1000, lingerMs: 60_000 });
    try {
      await warehouse.ensureSchema();
      await warehouse.startRun({ resource: 'deals', mode: 'full', startedAt: new Date() });
      // Still lingering open, so the commit is in the WAL, not yet checkpointed into the file.
      expect(existsSync(`${warehouse.path}.wal`)).toBe(true);
      expect(statSync(`${warehouse.path}.wal`).mode & 0o777).toBe(0o600);
      expect(statSync(warehouse.path).mode & 0o777).toBe(0o600);
    } finally {
      await warehouse.close();
      process.umask(previous);
    }
  });
});

describe('releasing the file', () => {
  it('folds the WAL into the file without blocking the event loop (a checkpoint inside a synchronous close froze a run for 0.2-0.6 s)', async () => {
    const warehouse = openWarehouse({ path: join(dir, 'w.duckdb'), lockTimeoutMs: 1000, lingerMs: 60_000 });
    await warehouse.ensureSchema();
    await warehouse.startRun({ resource: 'deals', mode: 'full', startedAt: new Date() });
    expect(existsSync(`${warehouse.path}.wal`)).toBe(true);
    // Counts event-loop turns while the release runs: a close that checkpoints synchronously allows none.
    let turns = 0;
    let closing = true;
    const spin = (): void => {
      turns += 1;
      if (closing) setImmediate(spin);
    };
    setImmediate(spin);
    await warehouse.close();
    closing = false;
    expect(turns).toBeGreaterThan(0);
    expect(existsSync(`${warehouse.path}.wal`)).toBe(false);
  });
});

describe('a full disk', () => {
  const diskFull = [
    'TransactionContext Error: Failed to commit: Could not write file "/d/w.duckdb.wal": No space left on device',
    'TransactionContext Error: Failed to commit: Could not write file "/d/w.duckdb.wal": File too large',
    'IO Error: Could not write file "/d/w.duckdb": Disk quota exceeded',
    'FATAL Error: database has been invalidated because of a previous fatal error. Original error: "Could not write file: No space left on device"',
  ];

  it.each(diskFull)('is warehouse_disk_full, retriable, one line naming the path and the fix: %s', (message) => {
    expect(isDiskFull(message)).toBe(true);
    const error = warehouseFailure('/d/w.duckdb', 'commitBatch', new Error(message));
    expect(error).toBeInstanceOf(SalesyncError);
    expect(error.code).toBe('warehouse_disk_full');
    expect(error.disposition).toBe('retriable');
    expect(error.message).toContain('/d/w.duckdb');
    expect(error.message).toMatch(/free space or raise the limit/);
    expect(error.message).not.toContain('\n');
  });

  it.skipIf(!existsSync('/dev/full'))(
    "names the temporary directory, not the warehouse's disk, when a batch's stage file meets a full disk (a real ENOSPC)",
    async () => {
      // The spill file is created where stage files go; its appends are written to /dev/full instead.
      const full = openSync('/dev/full', 'w');
      const spill = openSpillFile((_fd, chunks) => writeChunks(full, chunks));
      try {
        spill.append([Buffer.from('{"c0":"D00000000000000001"}\n')]);
        const error = (await spill.finish().catch((e: unknown) => e)) as SalesyncError;
        expect(error).toBeInstanceOf(SalesyncError);
        expect(error.code).toBe('warehouse_disk_full');
        expect(error.disposition).toBe('retriable');
        expect(error.message).toContain(`stage files ${tmpdir()} (TMPDIR)`);
        expect(error.message).toContain('ENOSPC');
        expect(error.message).not.toContain('The disk holding the warehouse');
        expect(error.message).toMatch(/free space or raise the limit, or point TMPDIR at a larger disk/);
        expect(error.message).not.toContain('\n');
      } finally {
        closeSync(full);
        await spill.discard();
      }
    },
  );

  it("reads a spill that DuckDB's temp directory has no room for as a full disk, not as memory", () => {
    const message = 'Out of Memory Error: failed to offload data block of size 256.0 KiB (0 bytes/18.0 KiB used).';
    const error = warehouseFailure('/d/w.duckdb', 'commitBatch', new Error(message));
    expect(error.code).toBe('warehouse_disk_full');
    expect(error.disposition).toBe('retriable');
    expect(error.message).toContain("no space left for DuckDB's temporary files");
    expect(error.message).toContain('failed to offload data block of size 256.0 KiB');
    expect(error.message).toMatch(/free space or raise the limit/);
    expect(error.message).not.toContain('SALESYNC_DUCKDB_MEMORY');
  });

  it("names an exhausted DuckDB memory limit in one line with our setting, not DuckDB's SQL advice", () => {
    const message =
      'Out of Memory Error: failed to allocate data of size 32.0 MiB (42.4 MiB/61.0 MiB used)\n\nPossible solutions:\n* Reducing the number of threads (SET threads=X)';
    const error = warehouseFailure('/d/w.duckdb', 'commitBatch', new Error(message));
    expect(error.code).toBe('warehouse_out_of_memory');
    expect(error.message).toContain('failed to allocate data of size 32.0 MiB');
    expect(error.message).toContain('SALESYNC_DUCKDB_MEMORY');
    expect(error.message).not.toContain('SET threads');
    expect(error.message).not.toContain('\n');
  });

  it('names a checkpoint that ran out of memory (DuckDB raises it as FATAL) the same way', () => {
    const message =
      'FATAL Error: Failed to create checkpoint because of error: failed to pin block of size 256.0 KiB (122.0 MiB/122.0 MiB used)';
    const error = warehouseFailure('/d/w.duckdb', 'commitBatch', new Error(message));
    expect(error.code).toBe('warehouse_out_of_memory');
    expect(error.message).toContain('failed to pin block of size 256.0 KiB');
    expect(error.message).toContain('SALESYNC_DUCKDB_MEMORY');
  });

  it('leaves every other DuckDB failure warehouse_error', () => {
    const error = warehouseFailure('/d/w.duckdb', 'query', new Error('Parser Error: syntax error at or near "SELEC"'));
    expect(error.code).toBe('warehouse_error');
    expect(isDiskFull('Catalog Error: Table with name spaceship does not exist')).toBe(false);
  });
});
