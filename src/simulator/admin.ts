import type { KeyRing } from './auth.js';
import { isRole } from './auth.js';
import { coreValues, generatedSummary, randomValue, summaryStatusName } from './content.js';
import type { Corruptions } from './corruption.js';
import { invalidRequest, notFound } from './errors.js';
import type { FaultInjector } from './faults.js';
import type { RuntimeKnobs } from './knobs.js';
import { checkCommitLag, checkCommitLagScope, checkHook, checkReadReplicas, checkSummaryStatuses, mergeClock } from './knobs.js';
import { mutateRandom } from './mutate-random.js';
import type { RequestStats } from './request-stats.js';
import type { ActivityResource, SalesData, StoredSummary } from './sales-data.js';
import { ACTIVITY_PARENT } from './schema.js';
import { MICROS_PER_DAY } from './timestamps.js';
import type { PropertyValue, RecordResource, SimulatorAdmin, Summary, Truth } from './types.js';
import { RECORD_RESOURCES } from './types.js';
import { toWire } from './wire-values.js';

/** The in-process admin surface: ground truth, scripted changes, definitions, users, keys, faults and stats. */

export interface AdminDeps {
  data: SalesData;
  keys: KeyRing;
  faults: FaultInjector;
  stats: RequestStats;
  nowMs: () => number;
  corruptions: Corruptions;
  knobs: RuntimeKnobs;
}

function checkResource(resource: unknown): asserts resource is RecordResource {
  if (!(RECORD_RESOURCES as readonly unknown[]).includes(resource)) {
    throw invalidRequest(`不明なリソースです: ${String(resource)}`);
  }
}

export function recordActivity(
  deps: AdminDeps,
  resource: ActivityResource,
  parentId: string,
  properties: Record<string, PropertyValue> = {},
): { activity: ReturnType<SalesData['render']>; parent: ReturnType<SalesData['render']> } {
  const { data } = deps;
  if (resource !== 'meeting-logs' && resource !== 'contact-activities') {
    throw invalidRequest('活動は meeting-logs または contact-activities です。');
  }
  const { parent, link } = ACTIVITY_PARENT[resource];
  data.require(parent, parentId);
  const now = deps.nowMs() * 1000;
  const generated = coreValues(resource, data.changePrng, { fromMicros: now - MICROS_PER_DAY, toMicros: now }, () => parentId);
  const values = { ...toWire(data.schemas[resource], generated), [link]: parentId, ...properties };
  const activity = data.create(resource, values, { allowReadOnly: true });
  const parentRecord = data.require(parent, parentId);
  return { activity: data.render(resource, activity), parent: data.render(parent, parentRecord) };
}

/** Summaries appear, complete or are regenerated; the log's updated_at never moves. */
export function generateSummaries(data: SalesData, logId: string): Summary[] {
  const log = data.require('meeting-logs', logId);
  const current = data.summaries.get(logId) ?? [];
  const prng = data.changePrng;
  const pending = summaryStatusName(data.summaryStatuses, 'pending');
  const completed = summaryStatusName(data.summaryStatuses, 'completed');
  const next: StoredSummary[] =
    current.length === 0
      ? (['overview', 'temperature'] as const).map((kind) => ({
          ...generatedSummary(prng, kind, 'pending', pending),
          updatedAt: data.clock(),
        }))
      : current.map((s) => ({
          // A regenerated summary keeps its kind: select summaries stay select, text summaries stay text.
          ...generatedSummary(prng, s.result_type === 'select' ? 'temperature' : 'overview', 'completed', completed),
          summary_type: s.summary_type,
          updatedAt: data.clock(),
        }));
  data.summaries.set(logId, next);
  return data.renderSummaries(log);
}

export function createAdmin(deps: AdminDeps): SimulatorAdmin {
  const { data, keys, faults, stats, corruptions, knobs } = deps;
  const corrupted = () =>
    corruptions.ids(
      (resource, id) => data.stores[resource].get(id) !== undefined,
      (id) => data.users.has(id),
    );
  const admin: SimulatorAdmin = {
    truth(): Truth {
      const records = {} as Truth['records'];
      const properties = {} as Truth['properties'];
      for (const resource of RECORD_RESOURCES) {
        records[resource] = data.stores[resource].ordered().map((r) => data.render(resource, r));
        properties[resource] = data.schemas[resource].definitions();
      }
      const summaries: Truth['summaries'] = {};
      for (const log of data.stores['meeting-logs'].ordered()) {
        if (data.summaries.has(log.id)) summaries[log.id] = data.renderSummaries(log);
      }
      const truth: Truth = { records, summaries, users: data.sortedUsers().map((u) => data.renderUser(u)), properties };
      const broken = corrupted();
      if (broken.users.length > 0 || RECORD_RESOURCES.some((r) => broken.records[r].length > 0)) truth.corrupted = broken;
      return truth;
    },
    getRecord(resource, id) {
      checkResource(resource);
      const record = data.stores[resource].get(id);
      return record ? data.renderSingle(resource, record) : undefined;
    },
    createRecord(resource, properties) {
      checkResource(resource);
      return data.renderSingle(resource, data.create(resource, properties, { allowReadOnly: true }));
    },
    updateRecord(resource, id, properties) {
      checkResource(resource);
      return data.renderSingle(resource, data.patch(resource, id, properties, { allowReadOnly: true }).record);
    },
    deleteRecord(resource, id) {
      checkResource(resource);
      data.delete(resource, id);
    },
    restoreRecord(resource, id) {
      checkResource(resource);
      return data.renderSingle(resource, data.restore(resource, id));
    },
    changeLink(resource, id, linkProperty, newId) {
      checkResource(resource);
      return data.render(resource, data.changeLink(resource, id, linkProperty, newId));
    },
    runPredictionBatch: () => data.runPredictionBatch(),
    recordActivity: (resource, parentId, properties) => recordActivity(deps, resource, parentId, properties),
    setSummaries(logId, summaries) {
      const log = data.require('meeting-logs', logId);
      data.setSummaries(logId, summaries);
      return data.renderSummaries(log);
    },
    generateSummaries: (logId) => generateSummaries(data, logId),
    addProperty(resource, def) {
      checkResource(resource);
      return data.addProperty(resource, def);
    },
    updatePropertyOptions(resource, apiName, options) {
      checkResource(resource);
      return data.updatePropertyOptions(resource, apiName, options);
    },
    renameProperty(resource, apiName, displayName) {
      checkResource(resource);
      return data.renameProperty(resource, apiName, displayName);
    },
    changePropertyType(resource, apiName, newType) {
      checkResource(resource);
      return data.changePropertyType(resource, apiName, newType);
    },
    removeProperty(resource, apiName) {
      checkResource(resource);
      data.removeProperty(resource, apiName);
    },
    addUser: (user) => data.renderUser(data.addUser(user)),
    setUserActive: (id, isActive) => data.renderUser(data.setUserActive(id, isActive)),
    removeUser: (id) => data.removeUser(id),
    addKey(key, role) {
      if (typeof key !== 'string' || key === '') throw invalidRequest('key は必須です。');
      if (!isRole(role)) throw invalidRequest(`不明なロールです: ${String(role)}`);
      keys.add(key, role);
    },
    revokeKey(key) {
      if (keys.roleOf(key) === undefined) throw notFound('指定されたキーは存在しません。');
      keys.revoke(key);
    },
    mutateRandom: (count, seed, kinds) =>
      mutateRandom(
        {
          data,
          recordActivity: (resource, parentId) => recordActivity(deps, resource, parentId),
          generateSummaries: (logId) => generateSummaries(data, logId),
          randomValue,
          nowMs: deps.nowMs,
        },
        count,
        seed,
        kinds,
      ),
    setFaults: (settings) => faults.set(settings),
    clearFaults: () => faults.clear(),
    failNext: (n, kind, pathPrefix) => faults.failNext(n, kind, pathPrefix),
    stats: () => stats.read(),
    resetStats: () => stats.reset(),
    setOnListPage(hook) {
      knobs.onListPage = checkHook(hook);
    },
    setCommitLag(ms, scope) {
      data.lag.lag = checkCommitLag(ms);
      if (scope !== undefined) data.lagScope = checkCommitLagScope(scope);
    },
    setReadReplicas(count, serving) {
      const replicas = checkReadReplicas(count, serving);
      data.lag.setReplicas(replicas.count, replicas.serving);
    },
    setClock(settings) {
      knobs.clock = mergeClock(knobs.clock, settings);
    },
    expireCursors(answer = 'invalid_request') {
      if (answer !== 'invalid_request' && answer !== 'not_found') throw invalidRequest('answer は invalid_request または not_found です。');
      knobs.cursorEpoch += 1;
      knobs.refusedCursor = answer;
    },
    listTwice(resource, id, twice = true) {
      if (twice) knobs.listedTwice.add(`${resource}/${id}`);
      else knobs.listedTwice.delete(`${resource}/${id}`);
    },
    keepReplica: () => data.keepReplica(),
    routeSingleViews: (to) => data.routeSingleViews(to),
    setSummaryStatuses(statuses) {
      data.summaryStatuses = checkSummaryStatuses(statuses);
    },
    corruptRecord(resource, id, corruption) {
      checkResource(resource);
      data.require(resource, id);
      corruptions.corruptRecord(resource, id, corruption);
    },
    repairRecord(resource, id) {
      checkResource(resource);
      corruptions.repairRecord(resource, id);
    },
    corruptUser(id, corruption) {
      if (!data.users.has(id)) throw notFound();
      corruptions.corruptUser(id, corruption);
    },
    repairUser(id) {
      corruptions.repairUser(id);
    },
    corrupted,
    setUpdatedAt(resource, id, iso) {
      checkResource(resource);
      return data.render(resource, data.setUpdatedAt(resource, id, iso));
    },
  };
  return admin;
}
