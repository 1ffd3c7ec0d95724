/**
 * The Warehouse over one DuckDB file. Every method opens the file, works (writes in one transaction) and
 * closes it; calls on one Warehouse run one at a time, because two opens of one file in one process conflict.
 */
import { existsSync } from 'node:fs';
import pLimit from 'p-limit';
import { listValue, StatementType, type DuckDBConnection } from '@duckdb/node-api';
import { SalesyncError } from '../core/errors.js';
import { RECORD_RESOURCE_NAMES, resourceDescriptor, type RecordResourceName, type ResourceName } from '../core/resources.js';
import type { PropertyDefinition, RejectedRecord, ServiceRecord, ServiceUser } from '../core/types.js';
import { listingNamesTheGone } from '../core/user-listing.js';
import type {
  ChangeQuery,
  ColumnPlan,
  CommitResult,
  PageBatch,
  PreparedBatch,
  RecordBuffer,
  RunFinish,
  RunRow,
  RunStart,
  SummariesDue,
  SweepCandidates,
  Warehouse,
  WarehouseOptions,
} from './types.js';
import {
  BurstReader,
  inFoldedTransaction,
  inTransaction,
  LingeringDatabase,
  warehouseFailure,
  withDatabase,
  type AccessMode,
} from './connection.js';
import { assignColumnNames, distinctDefinitions, quoteIdentifier } from './identifiers.js';
import { type ChunkSpill, dedupeBatch, encodeRecords, type NdjsonRows, recordColumns, reencodeRows } from './rows.js';
import { SlabPool } from './slab-pool.js';
import { encodeInTurns } from './encode-turns.js';
import { BATCH_SPILL_BYTES, EncodedRecords, RecordList } from './record-buffer.js';
import {
  ndjsonObjectSize,
  openSpillFile,
  readStageLines,
  removeOrphanStageFiles,
  removeStageFile,
  writeStageFile,
  type StageFile,
} from './staging.js';
import {
  applyDefinitions,
  ensureFixedSchema,
  ensureRecordTable,
  fixedSchemaSql,
  keptColumns,
  planFromAssignments,
  readAssignments,
} from './schema.js';
import { existingTables, tableColumns, widestTableColumns } from './catalog.js';
import { checkpointSql, clearWalk, forgetWatermark, readState, recordCompletion } from './state.js';
import { currentProcessOwner, insertRun, markAbandonedRuns, selectLatestRuns, selectRecentRuns, updateRun } from './runs.js';
import { nextLookup, replaceSummaries, upsertRecords } from './upsert.js';
import { IdFilter, noteWrittenIds } from './id-filter.js';
import { ensureHistoryTables, markDeleted } from './history.js';
import { readCatalog } from './dbt-sources.js';
import { readChanges, writeChangesParquet } from './change-feed.js';
import { clearSeen, recordSeen, selectLogsAwaitingSummaries, selectSweepCandidates } from './reconcile.js';
import { countRejected, quarantinedIds, quarantineRecords, settleQuarantine } from './quarantine.js';
import { liveUserIds, writeUsers } from './users.js';
import { exportParquet } from './export.js';
import { automaticMemoryLimit, OPEN_MEMORY_LIMIT_MB, readMemoryLimitMb } from './memory-limit.js';
import { readListedBefore, recordDefinitionChanges, valuesRewrittenBy } from './property-history.js';
import { publishFileAtomically, resolveGroupId, type SnapshotResult } from './snapshot.js';
import { adoptPublishedFile, assertReadableIfPresent, warehouseMissing, ensureWriterDirectory } from './files.js';
import { rebuildViews } from './views.js';
import { fillPendingColumns } from './column-fill.js';
import { compactFile, purgeProperties, readStoredPolicy, recordPolicy, storedProperties } from './purge.js';
import type { AppliedPolicy } from '../core/property-policy.js';
import { rowToJsonFriendly } from './values.js';
import { microsToIso } from '../core/time.js';

/** How long after a run's end, with no other run under way, its publish waits for another run to start or end. */
export const RUN_END_SETTLE_MS = 1000;

/** @defaultValue of `WarehouseOptions.lockTimeoutMs`: five minutes. */
export const DEFAULT_LOCK_TIMEOUT_MS = 300_000;

/** Plans that encode records the same way (column names, types and source properties, in order). */
function samePlan(a: readonly ColumnPlan[], b: readonly ColumnPlan[]): boolean {
  return (
    a === b ||
    (a.length === b.length &&
      a.every((p, i) => p.columnName === b[i]!.columnName && p.sqlType === b[i]!.sqlType && p.apiName === b[i]!.apiName))
  );
}

const PREPARED = Symbol('prepared batch');

/** What `prepareBatch` hands back: the batch checked and its encoding under way (or why it cannot be written). */
type Prepared = PreparedBatch & { [PREPARED]: true } & (
    | { invalid: { error: unknown } }
    | {
        /** The plan `early` encodes with. */
        guess: readonly ColumnPlan[] | undefined;
        /** The rows for `guess`, written to a stage file while the batch waits for the writer. */
        early: Promise<StageFile> | undefined;
        /** The batch's rows for `plan`, when the guess was wrong or there was none. */
        encodeFor: (plan: readonly ColumnPlan[]) => Promise<NdjsonRows>;
      }
  );

/** A batch's records given as a list; a buffer this warehouse did not make is refused. */
function asList(records: readonly ServiceRecord[] | RecordBuffer): readonly ServiceRecord[] {
  if (Array.isArray(records)) return records as readonly ServiceRecord[];
  throw new Error('a record buffer must come from the warehouse it is committed to (recordBuffer)');
}

function isPrepared(batch: PageBatch | PreparedBatch): batch is Prepared {
  return PREPARED in batch;
}

/** Statements `query` runs: those that read. Everything else is refused before it runs (`query_refused`). */
const READING_STATEMENTS = new Set<number>([StatementType.SELECT, StatementType.EXPLAIN, StatementType.PRAGMA]);

/** How a refused statement type is named (DuckDB files INSTALL under LOAD, USE under SET, CHECKPOINT under CALL). */
const REFUSED_NAMES: Partial<Record<number, string>> = {
  [StatementType.LOAD]: 'INSTALL/LOAD',
  [StatementType.SET]: 'SET/USE',
  [StatementType.VARIABLE_SET]: 'SET VARIABLE',
  [StatementType.CALL]: 'CALL/CHECKPOINT',
  [StatementType.COPY]: 'COPY',
  [StatementType.EXPORT]: 'EXPORT DATABASE',
  [StatementType.COPY_DATABASE]: 'COPY FROM DATABASE',
};

/** A statement that begins with a keyword that writes (or changes the session), for statements DuckDB cannot bind. */
const WRITE_KEYWORD =
  /(?:^|;)\s*(DELETE|INSERT|UPDATE|MERGE|CREATE|DROP|ALTER|TRUNCATE|COPY|EXPORT|IMPORT|ATTACH|DETACH|INSTALL|LOAD|SET|RESET|USE|CHECKPOINT|FORCE|VACUUM|CALL|BEGIN|COMMIT|ROLLBACK)\b/i;

/** DuckDB's own refusals in a READ_ONLY session with external access off: nothing ran. */
const DUCKDB_REFUSAL =
  /read-only mode|file system operations are disabled|external access|configuration has been locked|lock_configuration/i;

function refusal(what: string, cause?: unknown): SalesyncError {
  return new SalesyncError('query_refused', `${what} is not allowed: query is read-only`, {
    ...(cause === undefined ? {} : { cause }),
    context: { statement: what },
  });
}

/** A DuckDB refusal as `query_refused`, naming what it refused; any other error as it is. */
function asRefusal(error: unknown): unknown {
  const message = error instanceof Error ? error.message : String(error);
  if (/file system operations are disabled/i.test(message)) {
    const file = /Cannot access (?:file|directory) "([^"]*)"/.exec(message)?.[1];
    return refusal(`reading or writing a file other than the warehouse${file ? ` (${file})` : ''}`, error);
  }
  if (DUCKDB_REFUSAL.test(message)) return refusal(`a write (${message.split('\n')[0]!.slice(0, 160)})`, error);
  return error;
}

/**
 * Refuse, before anything runs, any statement of `sql` that is not a read (DELETE, INSERT, CREATE, COPY, ATTACH,
 * INSTALL, SET…). The session is READ_ONLY with external access off as well: this check names what was refused.
 */
async function refuseWrites(connection: DuckDBConnection, sql: string): Promise<void> {
  let extracted;
  try {
    extracted = await connection.extractStatements(sql);
  } catch (error) {
    // DuckDB cannot even parse a write inside a CTE; say what it was rather than a parser error.
    const write = /\b(DELETE|INSERT|UPDATE|MERGE)\b/i.exec(sql);
    if (write) throw refusal(`${write[1]!.toUpperCase()} (a write inside a statement)`, error);
    throw error;
  }
  for (let i = 0; i < extracted.count; i += 1) {
    let prepared;
    try {
      prepared = await extracted.prepare(i);
    } catch (error) {
      // Preparing binds (a write on a table that is not there fails so): a write is named as one all the same.
      const write = WRITE_KEYWORD.exec(sql);
      if (write) throw refusal(write[1]!.toUpperCase(), error);
      throw error;
    }
    const type: number = prepared.statementType;
    prepared.destroySync();
    if (!READING_STATEMENTS.has(type)) throw refusal(REFUSED_NAMES[type] ?? StatementType[type] ?? `statement type ${type}`);
  }
}

function tableOf(resource: ResourceName): string {
  return resourceDescriptor(resource).table;
}

export function openWarehouse(options: WarehouseOptions): Warehouse {
  const path = options.path;
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const logger = options.logger;
  const batchSpillBytes = options.batchSpillBytes ?? BATCH_SPILL_BYTES;
  // Read once, lazily: the file system is touched only when a method needs the database.
  let schemaSql: string | undefined;
  // This Warehouse's queue of operations (instance state, not module state).
  let tail: Promise<unknown> = Promise.resolve();
  // Sessions that only read (a reader's handle, `query`) scan whole tables: they start at the reads' limit.
  const readLimit = options.memoryLimit ?? `${readMemoryLimitMb()}MB`;
  const openOptions = {
    path,
    lockTimeoutMs,
    ...(logger ? { logger } : {}),
    memoryLimit: options.memoryLimit ?? `${OPEN_MEMORY_LIMIT_MB}MB`,
    // A WAL's replay gets what reads get: the operator's limit, if set, is kept as given.
    replayMemoryLimit: readLimit,
    onWriteOpen: async (connection: DuckDBConnection) => {
      schemaSql ??= fixedSchemaSql();
      await ensureFixedSchema(connection, schemaSql);
    },
  };
  const readOptions = { ...openOptions, memoryLimit: readLimit };
  const database = new LingeringDatabase(openOptions, options.lingerMs ?? 0);
  // A reader of a published file: each burst of calls opens it READ_ONLY (whatever lies beside it); writes are refused.
  const readOnly = options.readOnly === true;
  const publishedReader = new BurstReader({ ...readOptions, access: 'read', neverWrite: true });
  const publishing = options.publish;
  // Whether a write went to the file since the last publish (or an older layout's file was taken over).
  let changedSincePublish = false;
  let lastPublishAt = Date.now();
  // Once per Warehouse, before its first call: the owner-only directory and the upgrade of an older layout.
  let prepared: Promise<void> | undefined;
  const prepareWriterFile = async (): Promise<void> => {
    // Stage files left by a writer killed mid-run: nothing reads them again.
    await removeOrphanStageFiles().then(
      (removed) => removed.length > 0 && logger?.info({ files: removed.length }, 'removed stage files left by processes no longer running'),
      (error: unknown) =>
        logger?.debug({ err: error instanceof Error ? error.message : String(error) }, 'could not look for stage files left behind'),
    );
    if (!publishing) return;
    // A group this host does not know fails now, before a run's walks, not at its first publish hours later.
    if (publishing.group) await resolveGroupId(publishing.group);
    await ensureWriterDirectory(path);
    if (await adoptPublishedFile(publishing.path, path)) {
      changedSincePublish = true; // published back at once: the copy there may have a WAL beside it
      logger?.info({ path, from: publishing.path }, "took over the warehouse of an earlier release as the writer's file");
    }
  };
  const runOwner = options.runOwner ?? currentProcessOwner();
  // Runs whose end this Warehouse could not write (a full disk): the next start marks them abandoned.
  const unrecordedEnds = new Set<string>();

  /**
   * `strict-read`: a genuinely READ_ONLY open whatever lingers (user SQL must not be able to write), closed after.
   */
  function serialized<T>(
    operation: string,
    access: AccessMode | 'strict-read',
    work: (connection: DuckDBConnection) => Promise<T>,
    { marksChange = access === 'write' }: { marksChange?: boolean } = {},
  ): Promise<T> {
    const run = async (): Promise<T> => {
      try {
        if (readOnly) {
          if (access === 'write') {
            throw new SalesyncError(
              'warehouse_read_only',
              `Warehouse ${operation} on ${path}: this handle reads the published file and never writes it`,
              {
                context: { path, operation },
              },
            );
          }
          if (assertReadableIfPresent(path) === 'missing') {
            throw warehouseMissing(path);
          }
          if (access === 'strict-read') return await withDatabase({ ...readOptions, access: 'read', sealed: true }, work);
          return await publishedReader.use(work);
        }
        await (prepared ??= prepareWriterFile());
        if (access === 'strict-read') {
          await database.close();
          return await withDatabase({ ...readOptions, access: 'read', sealed: true }, work);
        }
        if (marksChange) changedSincePublish = true;
        return await database.use(access, work);
      } catch (error) {
        if (error instanceof SalesyncError) throw error;
        throw warehouseFailure(path, operation, error);
      }
    };
    const result = tail.then(run, run);
    tail = result.catch(() => undefined);
    return result;
  }

  const nowIso = (): string => new Date().toISOString();

  /**
   * A checkpoint rewrites each changed column of a table at once, so it needs what a commit into the widest table
   * needs: at the limit a narrow batch left, one of a table 600 properties wide failed and invalidated the database,
   * and the WAL it left could not be replayed at the next open.
   */
  const checkpoint = async (connection: DuckDBConnection): Promise<void> => {
    await fitMemory(connection, await widestTableColumns(connection), 0);
    await connection.run('CHECKPOINT');
  };

  /** Publish the writer's file when a write went to it since the last publish (or the published file is gone). */
  const publish = (reason = 'asked'): Promise<SnapshotResult | null> =>
    serialized(
      'publish',
      'write',
      async (connection) => {
        if (!publishing) return null;
        if (!changedSincePublish && existsSync(publishing.path)) return null;
        // After a checkpoint the file holds every commit, and holding it read-write keeps other writers out.
        await checkpoint(connection);
        const access = { ...(publishing.mode === undefined ? {} : { mode: publishing.mode }), group: publishing.group ?? null };
        const result = await publishFileAtomically(path, publishing.path, access);
        for (const copy of publishing.copies ?? []) await publishFileAtomically(path, copy, access);
        changedSincePublish = false;
        lastPublishAt = Date.now();
        cancelDeferred();
        logger?.info({ path: result.path, bytes: result.bytes, durationMs: result.durationMs, reason }, 'warehouse published');
        return result;
      },
      { marksChange: false },
    );

  /** A publish the caller does not wait to hear about: a failure is logged, and the next one tries again. */
  const publishQuietly = (reason: string): Promise<void> =>
    publish(reason).then(
      () => undefined,
      (error: unknown) => {
        const failure = error instanceof SalesyncError ? error : warehouseFailure(path, 'publish', error);
        logger?.error({ path: publishing?.path, reason, code: failure.code, err: failure.message }, 'warehouse not published');
      },
    );

  // Runs of this Warehouse started and not finished. A copy costs ~2 s/GB where the file system has no reflink
  // (ext4), and the runs of one sync end close together: a run's end publishes once no other run has started or
  // ended for `RUN_END_SETTLE_MS` and none is under way, or else `everyMs` after the last publish, whichever is
  // first. One or two copies per sync rather than one per run; `publish()` and `close()` publish at once.
  const runsInFlight = new Set<string>();
  let deferred: { timer: NodeJS.Timeout; dueAt: number } | undefined;
  const cancelDeferred = (): void => {
    if (deferred) clearTimeout(deferred.timer);
    deferred = undefined;
  };
  const deferPublish = (dueAt: number): void => {
    if (deferred && deferred.dueAt <= dueAt) return;
    cancelDeferred();
    const timer = setTimeout(
      () => {
        deferred = undefined;
        if (!changedSincePublish) return;
        const everyMs = publishing?.everyMs ?? 0;
        const periodEnds = lastPublishAt + everyMs;
        if (runsInFlight.size > 0 && everyMs > 0 && Date.now() < periodEnds) deferPublish(periodEnds);
        else void publishQuietly('run finished');
      },
      Math.max(0, dueAt - Date.now()),
    );
    timer.unref();
    deferred = { timer, dueAt };
  };
  const publishAfterRunEnd = (): void => {
    const everyMs = publishing?.everyMs ?? 0;
    const settled = Date.now() + RUN_END_SETTLE_MS;
    deferPublish(runsInFlight.size === 0 || everyMs <= 0 ? settled : Math.max(settled, lastPublishAt + everyMs));
  };

  /** During a long walk: at most every `everyMs`, after a commit. */
  const publishIfDue = (): void => {
    if (!publishing || publishing.everyMs === undefined || publishing.everyMs <= 0) return;
    if (Date.now() - lastPublishAt < publishing.everyMs) return;
    lastPublishAt = Date.now(); // one queued publish per period, however many commits come meanwhile
    void publishQuietly('periodic');
  };

  // What a write session has already checked, so a run's many commits skip it: tables known to exist, each
  // resource's column plan and the columns its batches leave to the stored row (`kept`). Per connection (a new
  // session checks again, as another process may have written in between), and filled only after a commit,
  // since a rolled-back transaction created nothing. `lastBatch`: what each resource's last batch found stored
  // (committed or not), which only chooses how the next one looks (`nextLookup`). `fresh`: for a table seen
  // holding no row, every id the session's commits wrote to it since (`IdFilter`), a superset even of rolled-back
  // ones; no other write adds ids (they mark, delete, or rebuild rows of the same ids), so an id it has never
  // held is not stored.
  const sessionFacts = new WeakMap<
    DuckDBConnection,
    {
      tables: Set<string>;
      plans: Map<RecordResourceName, ColumnPlan[]>;
      kept: Map<RecordResourceName, string[]>;
      lastBatch: Map<RecordResourceName, { stored: number }>;
      fresh: Map<string, IdFilter>;
      memoryLimit: string;
    }
  >();
  const factsOf = (connection: DuckDBConnection) => {
    let facts = sessionFacts.get(connection);
    if (!facts)
      sessionFacts.set(
        connection,
        (facts = {
          tables: new Set(),
          plans: new Map(),
          kept: new Map(),
          lastBatch: new Map(),
          fresh: new Map(),
          memoryLimit: openOptions.memoryLimit,
        }),
      );
    return facts;
  };

  // Without a limit of the operator's, each commit sets DuckDB's to what its batch needs (`automaticMemoryLimit`):
  // a wide table or a huge record gets more, and the next ordinary batch gives it back.
  const automaticMemory = options.memoryLimit === undefined;
  const fitMemory = async (connection: DuckDBConnection, columns: number, objectBytes: number, floorMb?: number): Promise<void> => {
    if (!automaticMemory) return;
    const facts = factsOf(connection);
    const limit = automaticMemoryLimit(columns, objectBytes, floorMb);
    if (limit === facts.memoryLimit) return;
    try {
      await connection.run(`SET memory_limit = '${limit}'`);
      facts.memoryLimit = limit;
      logger?.debug({ path, memoryLimit: limit, columns, objectBytes }, 'DuckDB memory limit set for the batch');
    } catch (error) {
      // Only lowering can fail (DuckDB could not evict enough): the batch runs at the higher limit it has.
      logger?.debug({ path, memoryLimit: limit, err: error instanceof Error ? error.message : String(error) }, 'DuckDB memory limit kept');
    }
  };

  /**
   * A fill cut short (the process died between its pages) goes on at a session's first commit into the table, not
   * only at the next listing of definitions. Its failure is no reason to hold the batch back: the fill is tried
   * again at the next session, and until then the unfilled cells read NULL, their values in `_properties`.
   */
  const resumeFill = async (connection: DuckDBConnection, table: string): Promise<void> => {
    try {
      await fillPendingColumns(connection, table, logger ? { logger } : {});
    } catch (error) {
      logger?.warn(
        { path, table, err: error instanceof Error ? error.message : String(error) },
        'column fill not resumed; the batch goes on',
      );
    }
  };

  // The plan each resource's last commit used: a guess for encoding the next batch before it reaches the queue.
  const lastPlans = new Map<RecordResourceName, ColumnPlan[]>();
  // How many stored ids each resource's last batch found: while its batches find none (a first load), the walk's
  // next one is encoded without key lines, which only a staged batch reads (one that then finds some is decided
  // from its rows instead).
  const lastStored = new Map<RecordResourceName, number>();
  // Batches encode and go to their stage files one at a time, in the order they were prepared: the one the writer
  // takes next is ready soonest. Side by side, two batches would each finish when both had, and the writer would
  // wait for the pair.
  const oneAtATime = pLimit(1);
  // Stage files of batches prepared and not yet committed: a batch never committed (its walk failed first) has
  // its file removed when the warehouse closes.
  const stageFiles = new Set<Promise<StageFile>>();
  const staged = (file: Promise<StageFile>): Promise<StageFile> => {
    stageFiles.add(file);
    // Awaited at commit only if the plan still holds; a failure then surfaces there, never as an unhandled one.
    file.catch(() => stageFiles.delete(file));
    return file;
  };
  // Files that batches still gathering spilled to: a batch abandoned (its walk failed first) leaves none when the
  // warehouse closes; a finished one's file becomes its stage file, tracked above. A spill that fails is a
  // warehouse failure, so its walk commits nothing more: the batch is in no state to be written.
  const spills = new Set<ChunkSpill>();
  // Every batch's encoded chunks are carved from this warehouse's buffers, reused once written.
  const slabs = new SlabPool();
  const spillFailure = (error: unknown) =>
    error instanceof SalesyncError ? error : warehouseFailure(path, 'staging a batch in the temporary directory', error);
  const openSpill = (): ChunkSpill => {
    let spill: ChunkSpill;
    try {
      spill = openSpillFile();
    } catch (error) {
      throw spillFailure(error);
    }
    spills.add(spill);
    const append = (chunks: readonly Buffer[], written?: () => void) => {
      try {
        spill.append(chunks, written);
      } catch (error) {
        throw spillFailure(error);
      }
    };
    const finish = async () => {
      try {
        await spill.finish();
      } catch (error) {
        await spill.discard();
        throw spillFailure(error);
      } finally {
        spills.delete(spill);
      }
    };
    const discard = async () => {
      await spill.discard();
      spills.delete(spill);
    };
    return { path: spill.path, append, finish, discard };
  };
  const removeStaged = async (file: Promise<StageFile> | undefined): Promise<void> => {
    if (!file || !stageFiles.delete(file)) return;
    try {
      await removeStageFile(await file);
    } catch (error) {
      // Never written (its failure is the commit's), or not removable: nothing the batch's outcome depends on.
      logger?.debug({ err: error instanceof Error ? error.message : String(error) }, 'stage file not removed');
    }
  };
  /**
   * Check a batch and start encoding it with the plan the last commit used, now, while earlier calls still hold
   * the queue: a run's JS work overlaps DuckDB's. Re-encoded at commit only if the plan has changed meanwhile. A
   * batch gathered in a `recordBuffer` was encoded page by page as it came: only checked here.
   */
  const prepare = (resource: RecordResourceName, batch: PageBatch): Prepared => {
    const given = batch.records;
    if (given instanceof EncodedRecords) {
      // Encoded page by page as the walk gathered it (`recordBuffer`).
      if (given.observedWins !== (batch.observedWins ?? false)) {
        const error = new Error('a record buffer was committed under another dedupe rule than it was opened with');
        return { resource, batch, invalid: { error }, [PREPARED]: true };
      }
      if (given.invalid) return { resource, batch, invalid: given.invalid, [PREPARED]: true };
      const { plan: guess, syncedAt } = given;
      const rows = given.close();
      const early = staged(oneAtATime(() => writeStageFile(rows)));
      const encodeFor = async (plan: readonly ColumnPlan[]) => reencodeRows(await readStageLines(await early), guess, plan, syncedAt);
      return { resource, batch, guess, early, encodeFor, [PREPARED]: true };
    }
    let records: ServiceRecord[];
    try {
      const list = given instanceof RecordList ? given.records : asList(given);
      records = dedupeBatch(list, batch.observedWins ?? false);
    } catch (error) {
      // A batch that cannot be written never takes the file: its commit fails before opening it.
      return { resource, batch, invalid: { error }, [PREPARED]: true };
    }
    const syncedAt = nowIso();
    const guess = lastPlans.get(resource);
    const early = guess ? staged(oneAtATime(async () => writeStageFile(await encodeInTurns(records, guess, syncedAt)))) : undefined;
    const encodeFor = (plan: readonly ColumnPlan[]) => Promise.resolve(encodeRecords(records, plan, syncedAt));
    return { resource, batch, guess, early, encodeFor, [PREPARED]: true };
  };

  return {
    // Who this warehouse is to others (leases, logs): the path users know, whichever file this handle opens.
    path: publishing?.path ?? path,
    filePath: path,

    ensureSchema: () => serialized('ensureSchema', 'write', async () => undefined),

    applyPropertyDefinitions: (resource: RecordResourceName, listed: PropertyDefinition[]): Promise<ColumnPlan[]> =>
      serialized('applyPropertyDefinitions', 'write', async (connection) => {
        factsOf(connection).plans.delete(resource);
        factsOf(connection).kept.delete(resource);
        // Read once: nothing is written to the resource's definitions or table before `applyDefinitions` writes.
        const assignments = await readAssignments(connection, resource);
        const { definitions, duplicated } = distinctDefinitions(listed, assignments);
        if (duplicated.length > 0) {
          logger?.warn(
            { resource, apiNames: duplicated },
            'the service lists these properties more than once: one definition of each is kept',
          );
        }
        // Adding columns fills them in every stored row: that needs what a commit into the widened table needs.
        const columns = await tableColumns(connection, tableOf(resource));
        const { plan: widened } = assignColumnNames(assignments, definitions, columns ?? []);
        await fitMemory(connection, recordColumns(widened).length + keptColumns(columns ?? [], widened).length, 0);
        const applied = await inTransaction(connection, async () => {
          const now = nowIso();
          const listedBefore = await readListedBefore(connection, resource);
          const stored = { assignments, columns };
          const plan = await applyDefinitions(connection, resource, tableOf(resource), definitions, now, {
            ...(logger ? { logger } : {}),
            stored,
          });
          const changes = await recordDefinitionChanges(connection, resource, assignments, plan, definitions, now);
          const rewritten = valuesRewrittenBy(listedBefore, new Set(definitions.map((d) => d.api_name)), changes);
          if (rewritten.length > 0) {
            await forgetWatermark(connection, resource, now);
            logger?.warn(
              { resource, apiNames: rewritten },
              'properties changed type or left the listing, which moves no updated_at: the next walk lists every record again',
            );
          }
          // Every view, not just this resource's: views show linked resources' names too.
          await rebuildViews(connection);
          return plan;
        });
        // Columns added by ALTER, filled page by page, each page committed (a fill cut short resumes here next
        // time, or at the next session's first commit into the table); a rebuild left nothing to fill.
        await fillPendingColumns(connection, tableOf(resource), logger ? { logger } : {});
        // The plan the next commit will read: the walk that follows encodes its pages with it (`recordBuffer`).
        lastPlans.set(resource, planFromAssignments(await readAssignments(connection, resource)));
        return applied;
      }),

    prepareBatch: (resource: RecordResourceName, batch: PageBatch): PreparedBatch => prepare(resource, batch),

    discardBatch: (batch: PreparedBatch) => {
      if (isPrepared(batch) && !('invalid' in batch)) void removeStaged(batch.early);
    },

    recordBuffer: (resource: RecordResourceName, options: { observedWins: boolean }): RecordBuffer => {
      // Without a plan yet (no definitions applied, nothing committed by this handle), the records wait as they are.
      const plan = lastPlans.get(resource);
      return plan
        ? new EncodedRecords(plan, nowIso(), options.observedWins, {
            spill: { bytes: batchSpillBytes, open: openSpill },
            slabs,
            keyLines: lastStored.get(resource) !== 0,
          })
        : new RecordList();
    },

    commitBatch: (resource: RecordResourceName, given: PageBatch | PreparedBatch) => {
      const prepared = isPrepared(given) ? given : prepare(resource, given as PageBatch);
      if ('invalid' in prepared) return Promise.reject(prepared.invalid.error);
      const { batch, guess, early, encodeFor } = prepared;
      const committed = serialized('commitBatch', 'write', async (connection) => {
        const facts = factsOf(connection);
        const table = tableOf(resource);
        const known = facts.tables.has(table);
        const plan = facts.plans.get(resource) ?? planFromAssignments(await readAssignments(connection, resource));
        const lines = early && samePlan(plan, guess!) ? await early : await encodeFor(plan);
        let kept = facts.kept.get(resource);
        kept ??= keptColumns((await tableColumns(connection, table)) ?? [], plan);
        await fitMemory(connection, recordColumns(plan).length + kept.length, ndjsonObjectSize(lines.longestLine));
        if (!known) await resumeFill(connection, table);
        const sweep = batch.sweep;
        const rejects = batch.rejects ?? [];
        // A record listed but invalid was listed all the same: never a candidate for deletion.
        const rejectedIds = rejects.flatMap((r) => (r.id === null ? [] : [r.id]));
        // Whether anything runs after the records are written: if not, the writing script commits.
        const more =
          rejects.length > 0 || (batch.settlesQuarantine !== undefined && batch.runId !== undefined) || batch.summaries !== undefined;
        const result = await inFoldedTransaction(connection, async (tx) => {
          const now = nowIso();
          if (!known) {
            await tx.begin();
            await ensureRecordTable(connection, table);
            await ensureHistoryTables(connection, [table]);
          }
          if (sweep?.fresh) {
            await tx.begin();
            await clearSeen(connection, sweep.key);
          }
          const fresh = facts.fresh.get(table);
          const { written, changed, stored, emptyBefore } = await upsertRecords(connection, table, plan, kept, lines, {
            lookup: nextLookup(facts.lastBatch.get(resource)),
            storedNone: fresh !== undefined && lines.ids !== undefined && !fresh.mayHoldAny(lines.ids),
            ...(sweep ? { onlyChanged: true, sweepKey: sweep.key } : {}),
            ...(batch.observedWins ? { observedWins: true, ...(batch.observedSince ? { observedSince: batch.observedSince } : {}) } : {}),
            quarantineResource: resource,
            versions: {
              source: batch.source ?? 'incremental',
              runId: batch.runId ?? null,
              committedAt: now,
              observedAt: batch.observedAt ?? now,
            },
            prelude: [
              ...tx.opening(),
              ...(batch.checkpoint
                ? [checkpointSql(batch.stateKey ?? resource, batch.checkpoint, batch.completeWatermark, now, batch.confirmFrom ?? null)]
                : []),
            ],
            epilogue: more ? [] : tx.closing(),
          });
          facts.lastBatch.set(resource, { stored });
          lastStored.set(resource, stored);
          noteWrittenIds(facts.fresh, table, lines.ids, emptyBefore === true);
          if (sweep && rejectedIds.length > 0) await recordSeen(connection, sweep.key, rejectedIds);
          // After the written records left quarantine: a record both written and rejected by the batch stays in.
          await quarantineRecords(connection, resource, rejects, batch.runId ?? null, now);
          if (batch.settlesQuarantine && batch.runId !== undefined)
            await settleQuarantine(connection, resource, batch.runId, batch.settlesQuarantine.since);
          const summariesChanged = batch.summaries ? await replaceSummaries(connection, batch.summaries, batch.summariesReadAt) : 0;
          // Deletions are decided after a complete sweep (`sweepCandidates`, `completeSweep`), never by a batch.
          return { written, changed, deleted: 0, summariesChanged } satisfies CommitResult;
        });
        facts.tables.add(table);
        facts.plans.set(resource, plan);
        facts.kept.set(resource, kept);
        lastPlans.set(resource, plan);
        return result;
      }).then((result) => {
        publishIfDue();
        return result;
      });
      // Its stage file goes once the commit is over, written or not.
      return committed.finally(() => removeStaged(early));
    },

    replaceUsers: (users: ServiceUser[], completedAt: string, rejected?: { rejects: RejectedRecord[]; runId: string }) =>
      serialized('replaceUsers', 'write', (connection) =>
        inTransaction(connection, async () => {
          const now = nowIso();
          const rejects = rejected?.rejects ?? [];
          // A rejected user was listed, just invalid: not gone (`listingNamesTheGone` says when a listing tells).
          const listedIds = rejects.flatMap((r) => (r.id === null ? [] : [r.id]));
          const knowsWhoIsGone = listingNamesTheGone(users.length, rejects);
          const written = await writeUsers(connection, users, completedAt, now, knowsWhoIsGone ? listedIds : null);
          await quarantineRecords(connection, 'users', rejects, rejected?.runId ?? null, now);
          // A complete listing: a user not sent broken this time is fixed or gone.
          if (rejected) await settleQuarantine(connection, 'users', rejected.runId);
          await recordCompletion(connection, 'users', completedAt, now);
          return { written };
        }),
      ),

    liveUserIds: () => serialized('liveUserIds', 'read', (connection) => liveUserIds(connection)),

    storedUpdatedAt: (resource: RecordResourceName, ids: string[]) =>
      serialized('storedUpdatedAt', 'read', async (connection) => {
        const found = new Map<string, string>();
        const table = tableOf(resource);
        if (ids.length === 0 || (await tableColumns(connection, table)) === null) return found;
        // Ids are bound as one list parameter, never spliced into SQL.
        const reader = await connection.runAndReadAll(
          `SELECT id, epoch_us(updated_at) AS us FROM ${quoteIdentifier(table)}
           WHERE id IN (SELECT unnest(CAST($1 AS VARCHAR[]))) AND updated_at IS NOT NULL AND _deleted_at IS NULL`,
          [listValue(ids)],
        );
        for (const row of reader.getRowObjects()) found.set(String(row.id), microsToIso(BigInt(row.us as bigint)));
        return found;
      }),

    logsAwaitingSummaries: (due: SummariesDue) =>
      serialized('logsAwaitingSummaries', 'read', async (connection) => {
        const table = tableOf('meeting-logs');
        if ((await tableColumns(connection, table)) === null) return new Map<string, string>();
        const schedule = (await tableColumns(connection, 'meeting_log_summary_reads')) !== null;
        const found = await selectLogsAwaitingSummaries(connection, table, due, schedule);
        return new Map([...found].map(([id, us]) => [id, microsToIso(us)]));
      }),

    sweepCandidates: (resource: RecordResourceName, sweepKey: string): Promise<SweepCandidates> =>
      serialized('sweepCandidates', 'read', async (connection) => {
        const table = tableOf(resource);
        if ((await tableColumns(connection, table)) === null) return { ids: [], live: 0 };
        return selectSweepCandidates(connection, table, sweepKey);
      }),

    completeSweep: (
      resource: RecordResourceName,
      sweep: { key: string; stateKey: string; deletedIds: string[]; deletedAt: string; completedAt: string; runId?: string },
    ) =>
      serialized('completeSweep', 'write', (connection) =>
        inTransaction(connection, async () => {
          const table = tableOf(resource);
          if (sweep.deletedIds.length > 0 && (await tableColumns(connection, table)) !== null)
            await ensureHistoryTables(connection, [table]);
          const marked =
            (await tableColumns(connection, table)) === null
              ? 0
              : await markDeleted(connection, table, sweep.deletedIds, sweep.deletedAt, {
                  runId: sweep.runId ?? null,
                  committedAt: nowIso(),
                });
          await clearSeen(connection, sweep.key);
          await recordCompletion(connection, sweep.stateKey, sweep.completedAt, nowIso());
          // The sweep's own row keeps its start as its watermark: what the last complete sweep could vouch for.
          await connection.run(`UPDATE sync_state SET watermark = $2 WHERE resource = $1`, [sweep.stateKey, sweep.completedAt]);
          return marked;
        }),
      ),

    rejectedCounts: () => serialized('rejectedCounts', 'read', (connection) => countRejected(connection)),

    quarantinedIds: (resource: RecordResourceName, options: { exceptRun?: string; limit: number }) =>
      serialized('quarantinedIds', 'read', (connection) => quarantinedIds(connection, resource, options.exceptRun ?? null, options.limit)),

    readState: (resource: ResourceName, stateKey?: string) =>
      serialized('readState', 'read', async (connection) => ({ ...(await readState(connection, stateKey ?? resource)), resource })),

    clearWalk: (resource: ResourceName) =>
      serialized('clearWalk', 'write', (connection) => inTransaction(connection, () => clearWalk(connection, resource, nowIso()))),

    startRun: async (run: RunStart) => {
      const unrecorded = new Set(unrecordedEnds);
      const runId = await serialized('startRun', 'write', (connection) =>
        inTransaction(connection, async () => {
          await markAbandonedRuns(connection, runOwner, unrecorded);
          return insertRun(connection, run, runOwner);
        }),
      );
      for (const id of unrecorded) unrecordedEnds.delete(id);
      runsInFlight.add(runId);
      return runId;
    },

    finishRun: async (runId: string, finish: RunFinish) => {
      try {
        await serialized('finishRun', 'write', (connection) => inTransaction(connection, () => updateRun(connection, runId, finish)));
      } catch (error) {
        unrecordedEnds.add(runId);
        throw error;
      } finally {
        // Each run's end (a walk of one resource, a backfill, a reconcile), failed or not, publishes what it
        // committed: a failing resource never holds the others back (see `publishAfterRunEnd`).
        runsInFlight.delete(runId);
        if (publishing) publishAfterRunEnd();
      }
    },

    recentRuns: (limit: number): Promise<RunRow[]> => serialized('recentRuns', 'read', (connection) => selectRecentRuns(connection, limit)),
    latestRuns: (): Promise<RunRow[]> => serialized('latestRuns', 'read', (connection) => selectLatestRuns(connection)),

    tableCounts: () =>
      serialized('tableCounts', 'read', async (connection) => {
        const counts: Record<string, number> = {};
        const present = await existingTables(connection);
        for (const table of [...RECORD_RESOURCE_NAMES.map(tableOf), tableOf('users')]) {
          if (!present.has(table)) {
            counts[table] = 0;
            continue;
          }
          const reader = await connection.runAndReadAll(
            `SELECT count(*)::BIGINT AS n FROM ${quoteIdentifier(table)} WHERE _deleted_at IS NULL`,
          );
          counts[table] = Number(reader.getRowObjects()[0]?.n ?? 0);
        }
        return counts;
      }),

    query: (sql: string, options: { maxRows?: number } = {}) =>
      serialized('query', 'strict-read', async (connection) => {
        try {
          await refuseWrites(connection, sql);
          const { maxRows } = options;
          if (maxRows === undefined) return (await connection.runAndReadAll(sql)).getRowObjects().map(rowToJsonFriendly);
          // Streamed a chunk at a time, and only as far as asked: the rest is never materialized.
          const reader = await connection.streamAndReadUntil(sql, maxRows + 1);
          return reader
            .getRowObjects()
            .slice(0, maxRows + 1)
            .map(rowToJsonFriendly);
        } catch (error) {
          throw asRefusal(error);
        }
      }),

    publishSnapshot: (target: string) =>
      serialized(
        'publishSnapshot',
        'write',
        async (connection) => {
          // After a checkpoint the main file holds every commit, and holding it read-write keeps other writers out.
          await checkpoint(connection);
          return publishFileAtomically(
            path,
            target,
            publishing ? { ...(publishing.mode === undefined ? {} : { mode: publishing.mode }), group: publishing.group ?? null } : {},
          );
        },
        { marksChange: false },
      ),

    publish: () => publish(),

    exportParquet: (directory: string) =>
      serialized('exportParquet', 'read', async (connection) => {
        // Writing Parquet holds buffers per column, as a commit does: the limit for the widest table.
        await fitMemory(connection, await widestTableColumns(connection), 0, readMemoryLimitMb());
        return exportParquet(connection, directory);
      }),

    catalog: () => serialized('catalog', 'read', (connection) => readCatalog(connection)),

    readChanges: (query: ChangeQuery) => serialized('readChanges', 'read', (connection) => readChanges(connection, query)),

    writeChangesParquet: (query: ChangeQuery, file: string) =>
      serialized('writeChangesParquet', 'read', (connection) => writeChangesParquet(connection, query, file)),

    storedPropertyPolicy: (resource: RecordResourceName) =>
      serialized('storedPropertyPolicy', 'read', (connection) => readStoredPolicy(connection, resource)),

    storedProperties: (resource: RecordResourceName) =>
      serialized('storedProperties', 'read', (connection) => storedProperties(connection, resource, tableOf(resource))),

    applyPropertyPolicy: (resource: RecordResourceName, applied: AppliedPolicy, purge: readonly string[]) =>
      serialized('applyPropertyPolicy', 'write', async (connection) => {
        const columns = await inTransaction(connection, async () => {
          const dropped = await purgeProperties(connection, resource, tableOf(resource), purge);
          await recordPolicy(connection, resource, applied, nowIso());
          if (dropped.length > 0) await rebuildViews(connection);
          return dropped;
        });
        if (purge.length === 0) return { columns, compacted: false };
        // Freed blocks keep old values until reused: the file is rewritten with live data only.
        await database.close();
        const sizes = await compactFile(path);
        logger?.debug({ path, ...sizes }, 'warehouse compacted after a property purge');
        return { columns, compacted: true };
      }),

    close: () => {
      // What was written since the last publish is published first (a run cut short, a command without runs).
      cancelDeferred();
      if (publishing && prepared && changedSincePublish) void publishQuietly('closing');
      // After every queued call, release the file (a lingering handle included).
      // Batches prepared and never committed leave no stage file behind.
      const release = () => {
        publishedReader.close();
        return database.close();
      };
      const closed = tail
        .then(release, release)
        .finally(() => Promise.all([...[...spills].map((spill) => spill.discard()), ...[...stageFiles].map(removeStaged)]));
      tail = closed.catch(() => undefined);
      return closed;
    },
  };
}
