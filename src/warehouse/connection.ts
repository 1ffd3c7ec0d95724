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

export type AccessMode = 'read' | 'write';

export interface OpenOptions {
  path: string;
  /** `read` opens READ_ONLY when the file exists (many readers may share it); otherwise read-write. */
  access: AccessMode;
  lockTimeoutMs: number;
  logger?: Logger;
  /** Runs after every read-write open, before the work (the fixed schema). */
  onWriteOpen?: (connection: DuckDBConnection) => Promise<void>;
}

const LOCK_CONFLICT = 'Could not set lock on file';

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

async function createInstance(options: OpenOptions, readOnly: boolean): Promise<DuckDBInstance> {
  const { path, lockTimeoutMs, logger } = options;
  const started = Date.now();
  let warned = false;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await DuckDBInstance.create(path, readOnly ? { access_mode: 'READ_ONLY' } : {});
    } catch (error) {
      const message = messageOf(error);
      if (!isLockConflict(message)) {
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

/** Open the file, run `work` on one connection, and close everything again, whatever happens. */
export async function withDatabase<T>(options: OpenOptions, work: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
  const { path } = options;
  const existed = existsSync(path);
  // READ_ONLY cannot create the file, nor replay a WAL left by a crash: those opens go read-write.
  const readOnly = options.access === 'read' && existed && !existsSync(`${path}.wal`);
  if (!readOnly) mkdirSync(dirname(path), { recursive: true });
  const instance = await createInstance(options, readOnly);
  try {
    if (!existed) {
      try {
        chmodSync(path, 0o600); // sales data: owner only
      } catch {
        // Not every filesystem has modes; the file is still usable.
      }
    }
    const connection = await instance.connect();
    try {
      // Session time zone fixed so naive timestamps and TIMESTAMPTZ text never depend on the host.
      await connection.run(`SET TimeZone = 'UTC'`);
      if (!readOnly && options.onWriteOpen) await options.onWriteOpen(connection);
      return await work(connection);
    } finally {
      connection.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}

/** One transaction: all of `work` commits, or none of it. */
export async function inTransaction<T>(connection: DuckDBConnection, work: () => Promise<T>): Promise<T> {
  await connection.run('BEGIN TRANSACTION');
  let result: T;
  try {
    result = await work();
  } catch (error) {
    try {
      await connection.run('ROLLBACK');
    } catch {
      // An aborted transaction may refuse ROLLBACK; closing the connection discards it anyway.
    }
    throw error;
  }
  await connection.run('COMMIT');
  return result;
}
