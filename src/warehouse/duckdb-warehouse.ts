/**
 * The Warehouse over one DuckDB file. Every method opens the file, works (writes in one transaction) and
 * closes it; calls on one Warehouse run one at a time, because two opens of one file in one process conflict.
 */
import { listValue, type DuckDBConnection } from '@duckdb/node-api';
import { SalesyncError } from '../core/errors.js';
import { RECORD_RESOURCE_NAMES, resourceDescriptor, type RecordResourceName, type ResourceName } from '../core/resources.js';
import type { PropertyDefinition, ServiceRecord, ServiceUser } from '../core/types.js';
import type { ColumnPlan, CommitResult, PageBatch, RunFinish, RunRow, RunStart, Warehouse, WarehouseOptions } from './types.js';
import { inTransaction, LingeringDatabase, warehouseFailure, withDatabase, type AccessMode } from './connection.js';
import { quoteIdentifier } from './identifiers.js';
import { dedupeLatest, encodeRecords, recordColumns, recordEncoder } from './rows.js';
import { ndjsonObjectSize } from './staging.js';
import {
  applyDefinitions,
  ensureFixedSchema,
  ensureRecordTable,
  fixedSchemaSql,
  keptColumns,
  planFromAssignments,
  readAssignments,
  tableColumns,
} from './schema.js';
import { clearWalk, readState, recordCompletion, writeCheckpoint } from './state.js';
import { currentProcessOwner, insertRun, markAbandonedRuns, selectRecentRuns, updateRun } from './runs.js';
import { replaceSummaries, upsertRecords } from './upsert.js';
import { ensureHistoryTable } from './history.js';
import { clearSeen, markUnseenDeleted, selectLogsAwaitingSummaries } from './reconcile.js';
import { writeUsers } from './users.js';
import { exportParquet } from './export.js';
import { automaticMemoryLimit, BASE_MEMORY_LIMIT_MB } from './memory-limit.js';
import { recordDefinitionChanges } from './property-history.js';
import { publishFileAtomically } from './snapshot.js';
import { rebuildViews } from './views.js';
import { rowToJsonFriendly } from './values.js';
import { microsToIso } from '../core/time.js';

/** @defaultValue of `WarehouseOptions.lockTimeoutMs`: five minutes. */
export const DEFAULT_LOCK_TIMEOUT_MS = 300_000;

/** Plans that encode records the same way (column names, types and source properties, in order). */
function samePlan(a: readonly ColumnPlan[], b: readonly ColumnPlan[]): boolean {
  return a === b || (a.length === b.length && a.every((p, i) => p.columnName === b[i]!.columnName && p.sqlType === b[i]!.sqlType && p.apiName === b[i]!.apiName));
}

/** Records encoded per turn of the event loop: a large batch never holds up the pages other walks await. */
const ENCODE_SLICE = 250;

/** `encodeRecords`, yielding to the event loop every `ENCODE_SLICE` records. */
async function encodeInSlices(records: readonly ServiceRecord[], plan: readonly ColumnPlan[], syncedAt: string): Promise<string[]> {
  const encode = recordEncoder(plan, syncedAt);
  const lines: string[] = [];
  for (const record of records) {
    if (lines.length > 0 && lines.length % ENCODE_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
    lines.push(encode(record));
  }
  return lines;
}

function tableOf(resource: ResourceName): string {
  return resourceDescriptor(resource).table;
}

export function openWarehouse(options: WarehouseOptions): Warehouse {
  const path = options.path;
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const logger = options.logger;
  // Read once, lazily: the file system is touched only when a method needs the database.
  let schemaSql: string | undefined;
  // This Warehouse's queue of operations (instance state, not module state).
  let tail: Promise<unknown> = Promise.resolve();
  const openOptions = {
    path,
    lockTimeoutMs,
    ...(logger ? { logger } : {}),
    memoryLimit: options.memoryLimit ?? `${BASE_MEMORY_LIMIT_MB}MB`,
    onWriteOpen: async (connection: DuckDBConnection) => {
      schemaSql ??= fixedSchemaSql();
      await ensureFixedSchema(connection, schemaSql);
    },
  };
  const database = new LingeringDatabase(openOptions, options.lingerMs ?? 0);
  const runOwner = options.runOwner ?? currentProcessOwner();
  // Runs whose end this Warehouse could not write (a full disk): the next start marks them abandoned.
  const unrecordedEnds = new Set<string>();

  /**
   * `strict-read`: a genuinely READ_ONLY open whatever lingers (user SQL must not be able to write), closed after.
   */
  function serialized<T>(operation: string, access: AccessMode | 'strict-read', work: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      try {
        if (access === 'strict-read') {
          await database.close();
          return await withDatabase({ ...openOptions, access: 'read' }, work);
        }
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

  // What a write session has already checked, so a run's many commits skip it: tables known to exist, each
  // resource's column plan and the columns its batches leave to the stored row (`kept`). Per connection (a new
  // session checks again, as another process may have written in between), and filled only after a commit,
  // since a rolled-back transaction created nothing.
  const sessionFacts = new WeakMap<
    DuckDBConnection,
    { tables: Set<string>; plans: Map<RecordResourceName, ColumnPlan[]>; kept: Map<RecordResourceName, string[]>; memoryLimit: string }
  >();
  const factsOf = (connection: DuckDBConnection) => {
    let facts = sessionFacts.get(connection);
    if (!facts) sessionFacts.set(connection, (facts = { tables: new Set(), plans: new Map(), kept: new Map(), memoryLimit: openOptions.memoryLimit }));
    return facts;
  };

  // Without a limit of the operator's, each commit sets DuckDB's to what its batch needs (`automaticMemoryLimit`):
  // a wide table or a huge record gets more, and the next ordinary batch gives it back.
  const automaticMemory = options.memoryLimit === undefined;
  const fitMemory = async (connection: DuckDBConnection, columns: number, objectBytes: number): Promise<void> => {
    if (!automaticMemory) return;
    const facts = factsOf(connection);
    const limit = automaticMemoryLimit(columns, objectBytes);
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

  // The plan each resource's last commit used: a guess for encoding the next batch before it reaches the queue.
  const lastPlans = new Map<RecordResourceName, ColumnPlan[]>();

  return {
    path,

    ensureSchema: () => serialized('ensureSchema', 'write', async () => undefined),

    applyPropertyDefinitions: (resource: RecordResourceName, definitions: PropertyDefinition[]): Promise<ColumnPlan[]> =>
      serialized('applyPropertyDefinitions', 'write', (connection) => {
        factsOf(connection).plans.delete(resource);
        factsOf(connection).kept.delete(resource);
        return inTransaction(connection, async () => {
          const now = nowIso();
          const before = await readAssignments(connection, resource);
          const plan = await applyDefinitions(connection, resource, tableOf(resource), definitions, now, logger);
          await recordDefinitionChanges(connection, resource, before, plan, definitions, now);
          // Every view, not just this resource's: views show linked resources' names too.
          await rebuildViews(connection);
          return plan;
        });
      }),

    commitBatch: (resource: RecordResourceName, batch: PageBatch) => {
      // Validate before opening: a batch that cannot be written never takes the file.
      let records: ReturnType<typeof dedupeLatest>;
      try {
        records = dedupeLatest(batch.records);
      } catch (error) {
        return Promise.reject(error);
      }
      // Encoded now, with the plan the last commit used, while earlier calls still hold the queue: a run's JS
      // work overlaps DuckDB's. Re-encoded inside only if the plan turns out to have changed meanwhile.
      const syncedAt = nowIso();
      const guess = lastPlans.get(resource);
      const early = guess ? encodeInSlices(records, guess, syncedAt) : undefined;
      // Awaited below only if the plan still holds; a failure then surfaces there, never as an unhandled one.
      early?.catch(() => undefined);
      return serialized('commitBatch', 'write', async (connection) => {
        // Rejects with the earlier commit's own error: nothing of this batch is written.
        if (batch.after) await batch.after;
        const facts = factsOf(connection);
        const table = tableOf(resource);
        const known = facts.tables.has(table);
        const plan = facts.plans.get(resource) ?? planFromAssignments(await readAssignments(connection, resource));
        const lines = early && samePlan(plan, guess!) ? await early : encodeRecords(records, plan, syncedAt);
        let kept = facts.kept.get(resource);
        kept ??= keptColumns((await tableColumns(connection, table)) ?? [], plan);
        await fitMemory(connection, recordColumns(plan).length + kept.length, ndjsonObjectSize(lines));
        const result = await inTransaction(connection, async () => {
          const now = nowIso();
          if (!known) {
            await ensureRecordTable(connection, table);
            await ensureHistoryTable(connection, table);
          }
          if (batch.checkpoint) await writeCheckpoint(connection, batch.stateKey ?? resource, batch.checkpoint, batch.completeWatermark, now);
          const sweep = batch.sweep;
          if (sweep?.fresh) await clearSeen(connection, sweep.key);
          const { written, changed } = await upsertRecords(connection, table, plan, kept, lines, sweep ? { onlyChanged: true, sweepKey: sweep.key } : {});
          const summariesChanged = batch.summaries ? await replaceSummaries(connection, batch.summaries) : 0;
          // Only a complete sweep knows what vanished: its last batch marks, in the same transaction.
          const deleted = sweep && batch.checkpoint?.cursor === null ? await markUnseenDeleted(connection, table, sweep.key, sweep.startedAt, now) : 0;
          return { written, changed, deleted, summariesChanged } satisfies CommitResult;
        });
        facts.tables.add(table);
        facts.plans.set(resource, plan);
        facts.kept.set(resource, kept);
        lastPlans.set(resource, plan);
        return result;
      });
    },

    replaceUsers: (users: ServiceUser[], completedAt: string) =>
      serialized('replaceUsers', 'write', (connection) =>
        inTransaction(connection, async () => {
          const now = nowIso();
          const written = await writeUsers(connection, users, completedAt, now);
          await recordCompletion(connection, 'users', completedAt, now);
          return { written };
        }),
      ),

    storedUpdatedAt: (resource: RecordResourceName, ids: string[]) =>
      serialized('storedUpdatedAt', 'read', async (connection) => {
        const found = new Map<string, string>();
        const table = tableOf(resource);
        if (ids.length === 0 || (await tableColumns(connection, table)) === null) return found;
        // Ids are bound as one list parameter, never spliced into SQL.
        const reader = await connection.runAndReadAll(
          `SELECT id, epoch_us(updated_at) AS us FROM ${quoteIdentifier(table)}
           WHERE id IN (SELECT unnest(CAST($1 AS VARCHAR[]))) AND updated_at IS NOT NULL`,
          [listValue(ids)],
        );
        for (const row of reader.getRowObjects()) found.set(String(row.id), microsToIso(BigInt(row.us as bigint)));
        return found;
      }),

    logsAwaitingSummaries: (createdAfter: string, finalStatuses: readonly string[]) =>
      serialized('logsAwaitingSummaries', 'read', async (connection) => {
        const table = tableOf('meeting-logs');
        if ((await tableColumns(connection, table)) === null) return new Map<string, string>();
        const found = await selectLogsAwaitingSummaries(connection, table, createdAfter, finalStatuses);
        return new Map([...found].map(([id, us]) => [id, microsToIso(us)]));
      }),

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
      return runId;
    },

    finishRun: async (runId: string, finish: RunFinish) => {
      try {
        await serialized('finishRun', 'write', (connection) => inTransaction(connection, () => updateRun(connection, runId, finish)));
      } catch (error) {
        unrecordedEnds.add(runId);
        throw error;
      }
    },

    recentRuns: (limit: number): Promise<RunRow[]> =>
      serialized('recentRuns', 'read', (connection) => selectRecentRuns(connection, limit)),

    tableCounts: () =>
      serialized('tableCounts', 'read', async (connection) => {
        const counts: Record<string, number> = {};
        for (const table of [...RECORD_RESOURCE_NAMES.map(tableOf), tableOf('users')]) {
          if ((await tableColumns(connection, table)) === null) {
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

    query: (sql: string) =>
      serialized('query', 'strict-read', async (connection) => {
        const reader = await connection.runAndReadAll(sql);
        return reader.getRowObjects().map(rowToJsonFriendly);
      }),

    publishSnapshot: (target: string) =>
      serialized('publishSnapshot', 'write', async (connection) => {
        // After a checkpoint the main file holds every commit, and holding it read-write keeps other writers out.
        await connection.run('CHECKPOINT');
        return publishFileAtomically(path, target);
      }),

    exportParquet: (directory: string) =>
      serialized('exportParquet', 'read', (connection) => exportParquet(connection, directory)),

    close: () => {
      // After every queued call, release the file (a lingering handle included).
      const closed = tail.then(
        () => database.close(),
        () => database.close(),
      );
      tail = closed.catch(() => undefined);
      return closed;
    },
  };
}
