/**
 * Publishing a read-only copy of the warehouse for BI tools. The copy is written under a temporary name in
 * the target's directory and renamed over the target: a rename is atomic within one file system, so a new
 * reader opens either the old copy or the new one, and a reader that has the old one open keeps its file
 * (its open descriptor still points at the replaced inode). Nothing ever holds the snapshot read-write, so
 * readers never block the writer. `cp` of a closed file is ~2 s/GB, 14x faster than COPY FROM DATABASE.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, chown, copyFile, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { ConfigError, SalesyncError, shown } from '../core/errors.js';

export interface SnapshotResult {
  /** The published file. */
  path: string;
  bytes: number;
  durationMs: number;
}

/** Who may read a published file. */
export interface PublishAccess {
  /** File mode of the published file. @defaultValue 0o640 */
  mode?: number;
  /** Group of the published file: a name (from /etc/group) or a numeric gid. @defaultValue the owner's own */
  group?: string | null;
}

/** @defaultValue of `PublishAccess.mode`: owner read-write, group read. */
export const DEFAULT_PUBLISH_MODE = 0o640;

/** A group name or number as a gid; names are looked up in /etc/group. */
export async function resolveGroupId(group: string): Promise<number> {
  const unknown = (why: string) =>
    new ConfigError(
      'invalid_config',
      `SALESYNC_PUBLISH_GROUP ${why}: ${shown(group)}; set it to a group name or gid of this host (see /etc/group), or unset it`,
      { group },
    );
  if (/^\d+$/.test(group)) {
    if (Number(group) > MAX_GID) throw unknown('is no gid (at most 4294967294)');
    return Number(group);
  }
  const lines = (await readFile('/etc/group', 'utf8').catch(() => '')).split('\n');
  for (const line of lines) {
    const [name, , gid] = line.split(':');
    if (name === group && gid !== undefined && /^\d+$/.test(gid)) return Number(gid);
  }
  throw unknown('names a group this host does not know');
}

/** The largest gid (2^32 − 2: −1 means "unchanged" to chown). */
const MAX_GID = 2 ** 32 - 2;

/** The directory mode that lets those who may read the file reach it: an x beside every r. */
export function directoryModeFor(fileMode: number): number {
  return 0o700 | (fileMode & 0o040 ? 0o050 : 0) | (fileMode & 0o004 ? 0o005 : 0);
}

/** Give `path` the group, then the mode, of `access`: what a published file (and an export) gets. */
export async function applyPublishAccess(path: string, access: PublishAccess): Promise<void> {
  if (access.group) await chown(path, -1, await resolveGroupId(access.group));
  await chmod(path, access.mode ?? DEFAULT_PUBLISH_MODE);
}

/**
 * Copy `source` (a checkpointed DuckDB file no one is writing) to `target`, replacing it atomically, with the
 * mode and group of `access` set before the rename (a reader never sees the file with other permissions).
 * The caller guarantees that no write is in flight for the duration of the copy.
 */
export async function publishFileAtomically(source: string, target: string, access: PublishAccess = {}): Promise<SnapshotResult> {
  const started = Date.now();
  if (resolve(source) === resolve(target)) {
    throw new SalesyncError('invalid_snapshot_path', `The snapshot path ${target} is the warehouse itself: choose another file.`, {
      context: { target },
    });
  }
  const directory = dirname(resolve(target));
  const mode = access.mode ?? DEFAULT_PUBLISH_MODE;
  // mkdir returns the first directory it created: made here (under the writer's 077 umask), it is opened up to
  // the readers the file's mode names; an existing directory is the operator's and left as it is.
  const created = await mkdir(directory, { recursive: true });
  if (created) await chmod(directory, directoryModeFor(mode)).catch(() => undefined);
  // Same directory as the target, so the rename cannot cross file systems.
  const temporary = join(directory, `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    // A reflink where the file system offers one, an ordinary copy otherwise.
    await copyFile(source, temporary, constants.COPYFILE_FICLONE);
    await applyPublishAccess(temporary, { mode, group: access.group ?? null });
    const handle = await open(temporary, 'r+');
    try {
      await handle.sync(); // on disk before it becomes visible: a crash never publishes a torn copy
    } finally {
      await handle.close();
    }
    // A WAL beside the target would be replayed into the new copy by its next reader: the copy has none.
    await rm(`${target}.wal`, { force: true });
    await rename(temporary, target);
  } catch (error) {
    await rm(temporary, { force: true });
    if (error instanceof SalesyncError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new SalesyncError('snapshot_failed', `Could not publish the warehouse snapshot to ${target}: ${message}`, {
      disposition: 'retriable',
      cause: error,
      context: { target },
    });
  }
  return { path: target, bytes: (await stat(target)).size, durationMs: Date.now() - started };
}
