/**
 * Where each DuckDB instance spills. DuckDB's default is one directory per file (`<file>.tmp`), shared by every
 * instance of that file, in this process or another (an analyst's session): instances spilling at once write the same
 * file names, and one that closes deletes every `duckdb_temp_*` file there, its own or not (duckdb/duckdb#15173).
 * A writer then read its spilled blocks back short ("Could not read enough bytes … duckdb_temp_storage_…") and
 * its checkpoint failed. So every instance salesync opens spills to a directory of its own beside the file, which
 * DuckDB creates at the first spill and removes when the instance closes.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isProcessAlive } from './runs.js';

/** A spill directory for one new instance of `path`: `<path>.tmp-<pid>-<random>`, beside the file. */
export function spillDirectory(path: string): string {
  return `${path}.tmp-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/** The process id in the name of one of `path`'s spill directories (`name` a sibling's), or null for another name. */
export function spillOwner(path: string, name: string): number | null {
  const prefix = `${basename(path)}.tmp-`;
  if (!name.startsWith(prefix)) return null;
  const match = /^(\d+)-[0-9a-f]{6}$/.exec(name.slice(prefix.length));
  return match ? Number(match[1]) : null;
}

/**
 * Remove the spill directories beside `path` whose process is gone (a crash skips DuckDB's cleanup). Best effort:
 * a directory that cannot be read or removed is left. Returns the ones removed.
 */
export async function removeOrphanSpills(path: string, runs: (pid: number) => boolean = isProcessAlive): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dirname(path));
  } catch {
    return [];
  }
  const orphans = names.filter((name) => {
    const pid = spillOwner(path, name);
    return pid !== null && !runs(pid);
  });
  const removed: string[] = [];
  for (const name of orphans) {
    const directory = join(dirname(path), name);
    try {
      await rm(directory, { recursive: true, force: true });
      removed.push(directory);
    } catch {
      // Another process's, or not ours to remove: left as it is.
    }
  }
  return removed;
}
