/**
 * Open, use, close. The file is held only for the duration of one piece of work, so other processes
 * (analysts' read-only sessions, another writer) can open it in between; a held file is waited for.
 */
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { Logger } from 'pino';
import { SalesyncError } from '../core/errors.js';
import { isPermissionDenied, notADuckdbWarehouse, warehouseUnreadable } from './files.js';
import { quoteIdentifier, quoteLiteral } from './identifiers.js';
import { removeOrphanSpills, spillDirectory } from './spill-directory.js';

export type AccessMode = 'read' | 'write';

export interface OpenOptions {
  path: string;
  /** `read` opens READ_ONLY when the file exists (many readers may share it); otherwise read-write. */
  access: AccessMode;
  lockTimeoutMs: number;
  logger?: Logger;
  /** DuckDB `memory_limit`, e.g. `200MB`. @defaultValue DuckDB's own */
  memoryLimit?: string;
  /**
   * The limit an open is tried at once more when replaying the WAL beside the file runs out of `memoryLimit` (a
   * wide table's commits left by a crash or a failed checkpoint): without it, such an open fails at every try.
   * Unset, that open fails with `warehouse_out_of_memory`.
   */
  replayMemoryLimit?: string;
  /**
   * Open READ_ONLY whatever is on disk (a WAL beside the file is never replayed), with external access turned
   * off and the configuration locked: the session can read this file and nothing else, and write nothing.
   * For user SQL (`salesync query`). Implies `neverWrite`. @defaultValue false
   */
  sealed?: boolean;
  /** Open READ_ONLY whatever is on disk: the readers of the published file. @defaultValue false */
  neverWrite?: boolean;
  /** Runs after every read-write open, before the work (the fixed schema). */
  onWriteOpen?: (connection: DuckDBConnection) => Promise<void>;
}

const LOCK_CONFLICT = 'Could not set lock on file';

/** WAL size at which a writer folds it into the file (see openSession). */
export const CHECKPOINT_THRESHOLD = '64MB';

/**
 * DuckDB settings of a writer, which bound what a sync holds beside its JS heap. A commit is one batch: a second
 * thread adds a `read_json` buffer (32 MiB) and allocator arenas that stay with the process, and takes the core the
 * sync's own JS needs (decoding pages, encoding the next batch); jemalloc's background thread hands freed pages
 * back to the OS between commits. Readers (`query`, exports) keep DuckDB's defaults: they scan whole tables.
 * Measured in the load and memory benches (docs/performance.md).
 */
export const WRITER_SETTINGS: Readonly<Record<string, string>> = { threads: '1', allocator_background_threads: 'true' };

/**
 * Rows a writer puts in each row group (DuckDB's default is 122,880). A checkpoint compresses a row group's columns
 * at once: at the default, the commits that checkpointed a text-heavy table held up to 110 MB more for 2-6 s, and
 * those peaks were a sync's peak RSS (docs/performance.md). Readers take any row group size.
 */
export const WRITER_ROW_GROUP_SIZE = 32_768;

/** The name a writer attaches the file under (attaching is how DuckDB takes a row group size). */
const WRITER_CATALOG = 'warehouse';

export interface WriterDatabase {
  instance: DuckDBInstance;
  /** Its default catalog is the file. */
  connection: DuckDBConnection;
}

/**
 * `path` opened read-write as the warehouse writes it: `settings` (e.g. WRITER_SETTINGS and a memory limit) and
 * WRITER_ROW_GROUP_SIZE. DuckDB's errors (a held lock, a file that is not DuckDB's) are thrown as they come.
 */
export async function openWriterDatabase(path: string, settings: Readonly<Record<string, string>>): Promise<WriterDatabase> {
  // Spills go beside the file, in a directory of this instance's own (see spill-directory.ts).
  const instance = await DuckDBInstance.create(':memory:', { temp_directory: spillDirectory(path), ...settings });
  try {
    const connection = await instance.connect();
    try {
      await connection.run(
        `ATTACH ${quoteLiteral(path)} AS ${quoteIdentifier(WRITER_CATALOG)} (ROW_GROUP_SIZE ${WRITER_ROW_GROUP_SIZE}); USE ${quoteIdentifier(WRITER_CATALOG)}`,
      );
      return { instance, connection };
    } catch (error) {
      connection.closeSync();
      throw error;
    }
  } catch (error) {
    instance.closeSync();
    throw error;
  }
}

export function isLockConflict(message: string): boolean {
  return message.includes(LOCK_CONFLICT);
}

/** The holder's PID from DuckDB's `Conflicting lock is held in <exe> (PID n)`. */
export function lockHolderPid(message: string): number | null {
  const m = /\(PID (\d+)\)/.exec(message);
  return m ? Number(m[1]) : null;
}

/** Backoff while a file is held: 100 ms doubling to 2 s. */
export function lockRetryDelayMs(attempt: number): number {
  return Math.min(2000, 100 * 2 ** Math.min(attempt, 5));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The OS's words for a full disk, a quota or a file-size limit (ENOSPC, EDQUOT, EFBIG), as DuckDB passes them on. */
/** DuckDB's words for a path that holds something other than a database: a file of another kind, a directory. */
const NOT_A_DATABASE = /it is not a valid DuckDB database file|Is a directory/;
const DISK_FULL = /No space left on device|Disk quota exceeded|File too large|\b(?:ENOSPC|EDQUOT|EFBIG)\b/i;

/**
 * DuckDB's words when a spill would pass `max_temp_directory_size`, which by default is the space left on the disk of
 * its temp directory (beside the warehouse): "failed to offload data block of size 256.0 KiB (0 bytes/18.0 KiB used)".
 */
const TEMP_SPACE_EXHAUSTED = /^Out of Memory Error: failed to offload data block[^\n]*/m;

export function isDiskFull(message: string): boolean {
  return DISK_FULL.test(message) || TEMP_SPACE_EXHAUSTED.test(message);
}

/**
 * DuckDB's words when a query needs more than its `memory_limit` (the text goes on with SQL-level advice), or
 * when a checkpoint does: that one DuckDB raises as FATAL (e.g. "FATAL Error: Failed to create checkpoint
 * because of error: failed to pin block of size 256.0 KiB (244.0 MiB/244.1 MiB used)", from `npm run bench:wide --
 * --columns 225` at 256MB). The commits before it are in the WAL; the next open replays them.
 */
const OUT_OF_MEMORY =
  /^Out of Memory Error: [^\n]*|^FATAL Error: [^\n]*(?:failed to pin block|could not allocate block|failed to allocate)[^\n]*/m;

/** DuckDB's words when an open's replay of the WAL needs more than its `memory_limit`. */
const WAL_REPLAY_OUT_OF_MEMORY = /^Out of Memory Error: Failure while replaying WAL file/m;

/**
 * `warehouse_disk_full`: the disk holding `where` (the warehouse, or the stage files) `cause`, with what to do
 * (`remedy` beside freeing space or raising the limit). Retriable: every commit before it is kept.
 */
function diskFull(where: string, cause: string, error: unknown, context: Record<string, string>, remedy = ''): SalesyncError {
  return new SalesyncError(
    'warehouse_disk_full',
    `The disk holding ${where} ${cause}. ` +
      `Every commit before this one is kept: free space or raise the limit${remedy}, then run again; walks resume from their last checkpoint.`,
    { disposition: 'retriable', cause: error, context },
  );
}

/**
 * A DuckDB failure as a SalesyncError: a full disk and an exhausted memory limit get codes of their own (the
 * operator's fix is space or a setting, not a bug report); anything else is `warehouse_error`. `what` names the operation, e.g. `commitBatch`.
 */
export function warehouseFailure(path: string, what: string, error: unknown): SalesyncError {
  const message = messageOf(error);
  const spill = TEMP_SPACE_EXHAUSTED.exec(message);
  if (spill || DISK_FULL.test(message)) {
    const cause = spill
      ? `has no space left for DuckDB's temporary files (${what}: ${spill[0]})`
      : `is full, or a quota or file-size limit was reached (${what}: ${message})`;
    return diskFull(`the warehouse ${path}`, cause, error, { path, operation: what });
  }
  const outOfMemory = OUT_OF_MEMORY.exec(message);
  if (outOfMemory) {
    // DuckDB's own advice ("SET threads", "SET memory_limit") is for SQL sessions: the operator's knobs are ours.
    return new SalesyncError(
      'warehouse_out_of_memory',
      `The warehouse ${path} needed more memory than DuckDB's limit (${what}: ${outOfMemory[0]}). ` +
        'Every commit before this one is kept: raise SALESYNC_DUCKDB_MEMORY (unset, each batch gets 96MB, or 64 MB plus 17/16 MB per column of its table when that is more), then run again; walks resume from their last checkpoint.',
      { cause: error, context: { path, operation: what } },
    );
  }
  return new SalesyncError('warehouse_error', `Warehouse ${what} on ${path} failed: ${message}`, {
    cause: error,
    context: { path, operation: what },
  });
}

/**
 * A write of one of salesync's own stage files (`directory`: the temporary directory, often not the warehouse's
 * disk) that failed: a full disk, a quota or a file-size limit is `warehouse_disk_full` naming that directory, so
 * the operator frees the right disk; any other error is returned as it is.
 */
export function stageFileFailure(directory: string, what: string, error: unknown): unknown {
  const message = messageOf(error);
  if (!DISK_FULL.test(message)) return error;
  const cause = `is full, or a quota or file-size limit was reached (${what}: ${message})`;
  return diskFull(
    `salesync's stage files ${directory} (TMPDIR)`,
    cause,
    error,
    { directory, operation: what },
    ', or point TMPDIR at a larger disk',
  );
}

/**
 * DuckDB creates the WAL (and any spill files) beside the warehouse with mode 0666 & ~umask: under the usual
 * umask 022 they would be world-readable while they hold the same sales data as the 0600 file. From the first
 * write open on, this process creates files for its owner only.
 */
function restrictNewFilesToOwner(): void {
  try {
    const previous = process.umask(0o077);
    process.umask(previous | 0o077);
  } catch {
    // Worker threads may not change the umask; the file itself is still chmod-ed below.
  }
}

async function openDatabase(options: OpenOptions, readOnly: boolean): Promise<WriterDatabase> {
  const { path, lockTimeoutMs, logger } = options;
  const started = Date.now();
  let warned = false;
  let memoryLimit = options.memoryLimit;
  for (let attempt = 0; ; attempt += 1) {
    try {
      const settings: Record<string, string> = readOnly ? { access_mode: 'READ_ONLY' } : { ...WRITER_SETTINGS };
      if (memoryLimit) settings.memory_limit = memoryLimit;
      if (!readOnly) return await openWriterDatabase(path, settings);
      const instance = await DuckDBInstance.create(path, { ...settings, temp_directory: spillDirectory(path) });
      try {
        return { instance, connection: await instance.connect() };
      } catch (error) {
        instance.closeSync();
        throw error;
      }
    } catch (error) {
      const message = messageOf(error);
      if (!isLockConflict(message)) {
        const replay = options.replayMemoryLimit;
        if (replay !== undefined && memoryLimit !== replay && WAL_REPLAY_OUT_OF_MEMORY.test(message)) {
          logger?.warn(
            { path, memoryLimit, replayMemoryLimit: replay },
            'replaying the commits in the WAL beside the warehouse ran out of memory; opening it again at a higher limit',
          );
          memoryLimit = replay;
          continue;
        }
        if (isDiskFull(message) || OUT_OF_MEMORY.test(message)) throw warehouseFailure(path, 'open', error);
        if (isPermissionDenied(message)) throw warehouseUnreadable(path, error);
        const notDatabase = NOT_A_DATABASE.exec(message);
        if (notDatabase) throw notADuckdbWarehouse(path, notDatabase[0]);
        throw new SalesyncError('warehouse_error', `Could not open the warehouse ${path}: ${message}`, {
          cause: error,
          context: { path },
        });
      }
      const pid = lockHolderPid(message);
      const waited = Date.now() - started;
      if (waited >= lockTimeoutMs) {
        const holder = pid === null ? 'another process' : `another process (PID ${pid})`;
        throw new SalesyncError(
          'warehouse_locked',
          `The warehouse ${path} is held by ${holder}; waited ${Math.round(waited / 1000)} s. ` +
            `Close that process (a DuckDB CLI, notebook or BI tool holding it open, or another sync), ` +
            `or wait for it to finish, then retry.`,
          { disposition: 'retriable', cause: error, context: { path, holderPid: pid, waitedMs: waited } },
        );
      }
      if (!warned) {
        // Once per wait, not per retry: the line says who to look at.
        logger?.warn({ path, holderPid: pid, lockTimeoutMs }, 'warehouse file is held by another process; waiting');
        warned = true;
      }
      await sleep(Math.min(lockRetryDelayMs(attempt), Math.max(1, lockTimeoutMs - waited)));
    }
  }
}

interface Session {
  instance: DuckDBInstance;
  connection: DuckDBConnection;
  readOnly: boolean;
}

async function openSession(options: OpenOptions): Promise<Session> {
  const { path } = options;
  const existed = existsSync(path);
  // READ_ONLY cannot create the file, nor replay a WAL left by a crash: those opens go read-write, except a
  // sealed one, which never writes (a missing file is then DuckDB's error, a WAL is left for the writer).
  const readOnly =
    options.sealed === true || options.neverWrite === true || (options.access === 'read' && existed && !existsSync(`${path}.wal`));
  if (!readOnly) {
    restrictNewFilesToOwner();
    mkdirSync(dirname(path), { recursive: true });
    await removeOrphanSpills(path);
  }
  const { instance, connection } = await openDatabase(options, readOnly);
  if (!existed) {
    try {
      chmodSync(path, 0o600); // sales data: owner only
    } catch {
      // Not every filesystem has modes; the file is still usable.
    }
  }
  try {
    // Session time zone fixed so naive timestamps and TIMESTAMPTZ text never depend on the host.
    await connection.run(`SET TimeZone = 'UTC'`);
    if (options.sealed) {
      // Reads no file but this one (read_text, COPY … TO, ATTACH, INSTALL), and user SQL cannot undo it.
      await connection.run('SET enable_external_access = false');
      await connection.run('SET lock_configuration = true');
    }
    // DuckDB checkpoints once the WAL passes 16 MB: during a bulk load that was most of the commit time.
    // A larger WAL is still durable (every commit syncs it); it is folded in when the writer closes, or at
    // this size.
    if (!readOnly) await connection.run(`SET checkpoint_threshold = '${CHECKPOINT_THRESHOLD}'`);
    if (!readOnly && options.onWriteOpen) await options.onWriteOpen(connection);
    return { instance, connection, readOnly };
  } catch (error) {
    closeSession({ instance, connection, readOnly });
    throw error;
  }
}

function closeSession(session: Session): void {
  try {
    session.connection.closeSync();
  } finally {
    session.instance.closeSync();
  }
}

/** Open the file, run `work` on one connection, and close everything again, whatever happens. */
export async function withDatabase<T>(options: OpenOptions, work: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
  const session = await openSession(options);
  try {
    return await work(session.connection);
  } finally {
    closeSession(session);
  }
}

/**
 * One READ_ONLY session for a burst of reads: `status` makes about twenty calls in a row, each of which opened and
 * closed the file (tens of milliseconds apiece). The session closes once its caller goes idle, at the next turn of
 * the event loop that finds no call waiting, so a reader still holds the file no longer than its queries.
 * Callers serialize `use`, as for LingeringDatabase.
 */
export class BurstReader {
  private session: Session | null = null;
  private closer: NodeJS.Immediate | undefined;

  constructor(private readonly options: OpenOptions) {}

  async use<T>(work: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    if (this.closer) clearImmediate(this.closer);
    this.closer = undefined;
    this.session ??= await openSession(this.options);
    const session = this.session;
    try {
      return await work(session.connection);
    } catch (error) {
      // After a failure the connection's state is unknown: the next call opens afresh.
      this.close();
      throw error;
    } finally {
      if (this.session === session) this.closer = setImmediate(() => this.close());
    }
  }

  close(): void {
    if (this.closer) clearImmediate(this.closer);
    this.closer = undefined;
    const session = this.session;
    this.session = null;
    if (session) closeSession(session);
  }
}

/**
 * The file handle of one writer. Opening and closing costs tens of milliseconds (more with a checkpoint), and a
 * run makes dozens of calls in a row, so after a write the file stays open for `lingerMs` in case the next call
 * comes soon; it is released once the writer goes quiet, so readers get every gap between runs. Reads made while
 * nothing lingers open READ_ONLY and close at once: a reader never holds the file longer than its query.
 * Callers serialize `use` (the warehouse's queue): one operation at a time.
 */
export class LingeringDatabase {
  private session: Session | null = null;
  private timer: NodeJS.Timeout | undefined;
  /** The release in progress, if any (never rejects): the next open waits for the file to be free. */
  private releasing: Promise<void> = Promise.resolve();

  constructor(
    private readonly options: Omit<OpenOptions, 'access'>,
    private readonly lingerMs: number,
  ) {}

  async use<T>(access: AccessMode, work: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    this.cancelLinger();
    if (this.session && access === 'write' && this.session.readOnly) await this.close();
    await this.releasing;
    this.session ??= await openSession({ ...this.options, access });
    const session = this.session;
    try {
      return await work(session.connection);
    } catch (error) {
      // After a failure the connection's state is unknown: closed as it is, and the next call opens afresh.
      this.session = null;
      try {
        closeSession(session);
      } catch {
        // The failure itself is what the caller needs to hear about.
      }
      throw error;
    } finally {
      if (this.session === session) {
        if (session.readOnly || this.lingerMs <= 0) await this.close();
        else
          this.timer = setTimeout(() => {
            this.close().catch((error: unknown) =>
              this.options.logger?.warn({ path: this.options.path, err: messageOf(error) }, 'could not close the warehouse file'),
            );
          }, this.lingerMs).unref();
      }
    }
  }

  /** Release the file now (a lingering handle too); resolves once it is closed. */
  close(): Promise<void> {
    this.cancelLinger();
    const session = this.session;
    this.session = null;
    if (!session) return this.releasing;
    const released = this.releasing.then(() => releaseSession(session));
    this.releasing = released.catch(() => undefined);
    return released;
  }

  private cancelLinger(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/**
 * Close a session, a writer's after an explicit CHECKPOINT: closing folds the WAL into the file itself, but
 * synchronously, and after a run's writes that held the event loop for 0.2-0.6 s (measured mid-sync, every
 * other walk's responses waiting). The statement runs on DuckDB's threads; the close then finds nothing to do.
 */
async function releaseSession(session: Session): Promise<void> {
  if (!session.readOnly) {
    try {
      await session.connection.run('CHECKPOINT');
    } catch {
      // Closing checkpoints anyway, or leaves the WAL for the next open to replay: nothing committed is lost.
    }
  }
  closeSession(session);
}

/**
 * A transaction whose BEGIN and COMMIT ride on the scripts of its first and last statements: a commit of a
 * batch then costs two round trips to DuckDB rather than four (each one waits for a turn of a busy event loop).
 */
export interface FoldedTransaction {
  /** `['BEGIN TRANSACTION']` for the first script that asks, nothing after: put it before the script's statements. */
  opening(): string[];
  /** Begin now, if no script has yet. */
  begin(): Promise<void>;
  /** `['COMMIT']`, to end the transaction's last script (nothing may run in it after that script). */
  closing(): string[];
}

/** One transaction, BEGIN and COMMIT folded into `work`'s scripts where it asks (`FoldedTransaction`). */
export async function inFoldedTransaction<T>(connection: DuckDBConnection, work: (tx: FoldedTransaction) => Promise<T>): Promise<T> {
  let begun = false;
  let closed = false;
  const tx: FoldedTransaction = {
    opening: () => (begun ? [] : ((begun = true), ['BEGIN TRANSACTION'])),
    begin: async () => {
      if (begun) return;
      begun = true;
      await connection.run('BEGIN TRANSACTION');
    },
    closing: () => ((closed = true), ['COMMIT']),
  };
  let result: T;
  try {
    result = await work(tx);
  } catch (error) {
    try {
      await connection.run('ROLLBACK');
    } catch {
      // Not in a transaction (its first script failed before BEGIN ran), or an aborted one: nothing is kept.
    }
    throw error;
  }
  if (!closed) await connection.run([...tx.opening(), 'COMMIT'].join(';\n'));
  return result;
}

/** One transaction: all of `work` commits, or none of it. */
export function inTransaction<T>(connection: DuckDBConnection, work: () => Promise<T>): Promise<T> {
  return inFoldedTransaction(connection, async (tx) => {
    await tx.begin();
    return work();
  });
}
