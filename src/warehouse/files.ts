/**
 * Where the warehouse's files live. `WAREHOUSE_PATH` is the analysts' file: salesync only ever replaces it by an
 * atomic rename of a finished copy, and never opens it read-write, so any number of readers may hold it for hours.
 * The writer works on a file of its own beside it, in an owner-only directory:
 *
 *   data/warehouse.duckdb                          published copy (SALESYNC_PUBLISH_MODE, SALESYNC_PUBLISH_GROUP)
 *   data/.salesync/                                0700
 *   data/.salesync/warehouse.writer.duckdb         the writer's file (0600), and its `.wal`
 */
import { constants } from 'node:fs';
import { chmod, copyFile, mkdir, rename, rm, stat } from 'node:fs/promises';
import { accessSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ConfigError, SalesyncError } from '../core/errors.js';

/** The directory, beside the published file, that holds the writer's file. */
export const WRITER_DIRECTORY = '.salesync';

/** The writer's file for a published path: `<dir>/.salesync/<name>.writer.duckdb` (`name` without `.duckdb`). */
export function writerPathFor(publishedPath: string): string {
  const name = basename(publishedPath).replace(/\.duckdb$/i, '');
  return join(dirname(publishedPath), WRITER_DIRECTORY, `${name}.writer.duckdb`);
}

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/** A warehouse path that holds something other than a DuckDB database (a file of another kind, a directory). */
export function notADuckdbWarehouse(path: string, what: string): ConfigError {
  return new ConfigError(
    'warehouse_not_duckdb',
    `${path} is not a DuckDB warehouse (${what}): point WAREHOUSE_PATH at a warehouse salesync wrote, or at a path ` +
      'that does not exist yet (salesync creates it); nothing was written',
    { path },
  );
}

/** The error of a read that the file system refused (EACCES, EPERM): not the same fix as a missing warehouse. */
export function warehouseUnreadable(path: string, cause?: unknown): SalesyncError {
  return new SalesyncError(
    'warehouse_unreadable',
    `cannot read ${path} (permission denied): ask its owner for read access ` +
      '(SALESYNC_PUBLISH_MODE and SALESYNC_PUBLISH_GROUP set who may read the published file)',
    { cause, context: { path } },
  );
}

/** Whether the writer's file for published `path` exists: a first sync is writing it, or was stopped, before any publish. */
export function firstSyncWriting(path: string): boolean {
  try {
    return statSync(writerPathFor(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * No published file at `path`. While a first sync runs (its writer's file exists), that is not a mistake: the
 * file appears when a run ends, or during a long one every SALESYNC_PUBLISH_EVERY.
 */
export function warehouseMissing(path: string): ConfigError {
  return new ConfigError(
    'warehouse_missing',
    firstSyncWriting(path)
      ? `no warehouse at ${path} yet: a first sync is writing it (or was stopped); it is published when a run ends, and every SALESYNC_PUBLISH_EVERY during a long one`
      : `no warehouse at ${path}: run \`salesync sync\` first (or set WAREHOUSE_PATH)`,
    { path },
  );
}

/** DuckDB's and the OS's words for a refused open. */
export function isPermissionDenied(message: string): boolean {
  return /Permission denied|\bEACCES\b|\bEPERM\b/i.test(message);
}

/**
 * Whether the published file is there to read: `missing`, `unreadable` (the file or a directory above it refuses
 * this user, where `existsSync` would say "missing"), or `readable`.
 */
export function publishedFileStatus(path: string): 'missing' | 'unreadable' | 'readable' {
  try {
    statSync(path);
  } catch (error) {
    const code = errnoOf(error);
    return code === 'EACCES' || code === 'EPERM' ? 'unreadable' : 'missing';
  }
  try {
    accessSync(path, constants.R_OK);
    return 'readable';
  } catch {
    return 'unreadable';
  }
}

/** Throws `warehouse_unreadable` when the file is there but this user may not read it; `missing` is the caller's. */
export function assertReadableIfPresent(path: string): 'missing' | 'readable' {
  const status = publishedFileStatus(path);
  if (status === 'unreadable') throw warehouseUnreadable(path);
  return status;
}

/** Create the writer's directory owner-only (0700), and make it so if it already exists. */
export async function ensureWriterDirectory(writerPath: string): Promise<void> {
  const directory = dirname(writerPath);
  await mkdir(directory, { recursive: true, mode: 0o700 });
  await chmod(directory, 0o700).catch(() => undefined);
}

/**
 * Upgrade from a release whose writer held `WAREHOUSE_PATH` itself: when the writer's file does not exist yet and
 * the published path does, that file (with its WAL, if a writer was killed) becomes the writer's file, copied so
 * that readers holding the old one keep it; the next publish replaces it. Returns whether it adopted a file.
 */
export async function adoptPublishedFile(publishedPath: string, writerPath: string): Promise<boolean> {
  if (await exists(writerPath)) return false;
  if (!(await exists(publishedPath))) return false;
  await ensureWriterDirectory(writerPath);
  const suffix = `.${process.pid}.adopting`;
  try {
    await copyFile(publishedPath, writerPath + suffix, constants.COPYFILE_FICLONE);
    await chmod(writerPath + suffix, 0o600);
    if (await exists(`${publishedPath}.wal`)) {
      await copyFile(`${publishedPath}.wal`, `${writerPath}.wal`, constants.COPYFILE_FICLONE);
      await chmod(`${writerPath}.wal`, 0o600);
    }
    await rename(writerPath + suffix, writerPath);
  } catch (error) {
    await rm(writerPath + suffix, { force: true });
    await rm(`${writerPath}.wal`, { force: true });
    const message = error instanceof Error ? error.message : String(error);
    if (isPermissionDenied(message)) throw warehouseUnreadable(publishedPath, error);
    if (errnoOf(error) === 'EISDIR') throw notADuckdbWarehouse(publishedPath, 'it is a directory');
    throw new SalesyncError('warehouse_error', `Could not take over ${publishedPath} as the writer's file ${writerPath}: ${message}`, {
      cause: error,
      context: { path: publishedPath, writerPath },
    });
  }
  return true;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Make `directory` and the directories missing above it, one at a time, each with `mode`; returns the topmost one
 * made, or undefined when it existed. Not `mkdir({ recursive: true })`: under a file system that refuses a new
 * entry with ENOENT (/proc, for root) Node's recursive mkdir retries for ever. A file in the way is ENOTDIR.
 */
export async function makeDirectories(directory: string, mode: number): Promise<string | undefined> {
  const missing: string[] = [];
  for (let dir = resolve(directory); ; dir = dirname(dir)) {
    const found = await stat(dir).catch((error: unknown) => {
      if (errnoOf(error) === 'ENOENT') return null;
      throw error;
    });
    if (found) {
      if (!found.isDirectory()) throw Object.assign(new Error(`ENOTDIR: ${dir} is not a directory`), { code: 'ENOTDIR', path: dir });
      break;
    }
    missing.push(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of [...missing].reverse()) {
    await mkdir(dir, { mode }).catch((error: unknown) => {
      if (errnoOf(error) !== 'EEXIST') throw error;
    });
  }
  return missing.at(-1);
}
