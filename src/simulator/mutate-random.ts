import type { randomValue as RandomValue } from './content.js';
import { coreValues } from './content.js';
import { ServiceError } from './errors.js';
import { createPrng, deriveSeed } from './prng.js';
import type { StoredRecord } from './record-store.js';
import type { ActivityResource, SalesData } from './sales-data.js';
import type { FieldSpec } from './schema.js';
import { MICROS_PER_DAY } from './timestamps.js';
import type { MutationReport, RecordResource, RecordView, Summary } from './types.js';
import { RECORD_RESOURCES } from './types.js';
import { sameValue } from './values.js';
import { toWire } from './wire-values.js';

/**
 * A deterministic mix of realistic changes, for tests and the demo: same data, count and seed ⇒ same changes.
 * Each report says whether the record's updated_at moved, so a test can predict what an incremental sync sees.
 */

export interface MutationDeps {
  data: SalesData;
  recordActivity(resource: ActivityResource, parentId: string): { activity: RecordView; parent: RecordView };
  generateSummaries(logId: string): Summary[];
  randomValue: typeof RandomValue;
  nowMs(): number;
}

type Kind = MutationReport['kind'];

const WEIGHTS: Array<[Kind, number]> = [
  ['update', 30],
  ['same-value', 15],
  ['create', 10],
  ['activity', 20],
  ['link', 10],
  ['summaries', 10],
  ['delete', 5],
];

const LINKS: Array<[RecordResource, string]> = [
  ['deals', 'account_id'],
  ['deals', 'owner_id'],
  ['contacts', 'account_id'],
  ['meeting-logs', 'deal_id'],
  ['contact-activities', 'contact_id'],
];

export function mutateRandom(deps: MutationDeps, count: number, seed: number, kinds?: Kind[]): MutationReport[] {
  const { data } = deps;
  const prng = createPrng(deriveSeed(seed, 'mutate'));
  const weights = WEIGHTS.filter(([kind]) => !kinds || kinds.includes(kind));
  if (weights.length === 0) throw new ServiceError(400, 'invalid_request', '変更の種類を1つ以上指定してください。');
  const total = weights.reduce((sum, [, w]) => sum + w, 0);
  const reports: MutationReport[] = [];

  const pickRecord = (resource: RecordResource): StoredRecord | undefined => {
    const store = data.stores[resource];
    return store.size === 0 ? undefined : store.at(prng.int(store.size));
  };
  const pickResource = (candidates: readonly RecordResource[]): RecordResource | undefined => {
    const live = candidates.filter((r) => data.stores[r].size > 0);
    return live.length === 0 ? undefined : prng.pick(live);
  };
  const ctx = (): { fromMicros: number; toMicros: number } => {
    const now = deps.nowMs() * 1000;
    return { fromMicros: now - 30 * MICROS_PER_DAY, toMicros: now };
  };
  const writable = (resource: RecordResource): FieldSpec[] =>
    data.schemas[resource].fields.filter(
      (f) => f.role === 'plain' && !(resource === 'contacts' && (f.def.api_name === 'last_name' || f.def.api_name === 'email')),
    );

  let attempts = 0;
  while (reports.length < count && attempts < count * 20) {
    attempts += 1;
    let roll = prng.int(total);
    let kind: Kind = weights[0]?.[0] as Kind;
    for (const [k, w] of weights) {
      if (roll < w) {
        kind = k;
        break;
      }
      roll -= w;
    }
    try {
      const report = applyOne(kind);
      if (report) reports.push(report);
    } catch (error) {
      // A generated change can be invalid (e.g. a select whose options were emptied): skip it.
      if (!(error instanceof ServiceError)) throw error;
    }
  }
  return reports;

  function applyOne(kind: Kind): MutationReport | null {
    switch (kind) {
      case 'update': {
        const resource = pickResource(RECORD_RESOURCES);
        const record = resource && pickRecord(resource);
        if (!resource || !record) return null;
        const fields = writable(resource);
        if (fields.length === 0) return null;
        const spec = prng.pick(fields);
        let value = deps.randomValue(spec, prng, ctx());
        if (sameValue(record.values[spec.def.api_name], value)) {
          if (typeof value === 'string' && spec.type === 'text') value = `${value}*`;
          else if (typeof value === 'number' && spec.type === 'number') value += 1;
          else if (typeof value === 'boolean') value = !value;
          else return null;
        }
        const wire = toWire(data.schemas[resource], { [spec.def.api_name]: value });
        const { moved } = data.patch(resource, record.id, wire);
        return { kind, resource, id: record.id, movedUpdatedAt: moved };
      }
      case 'same-value': {
        const resource = pickResource(RECORD_RESOURCES);
        const record = resource && pickRecord(resource);
        if (!resource || !record) return null;
        // Write back what the API shows, as an external sync would.
        const view = data.render(resource, record);
        const fields = writable(resource).filter((f) => view.properties[f.def.api_name] !== undefined);
        const echo = Object.fromEntries(fields.map((f) => [f.def.api_name, view.properties[f.def.api_name] ?? null]));
        const { moved } = data.patch(resource, record.id, echo);
        return { kind, resource, id: record.id, movedUpdatedAt: moved };
      }
      case 'create': {
        const resource = pickResource(['deals', 'companies', 'contacts']) ?? 'companies';
        const values = coreValues(resource, prng, ctx(), (target) => {
          const picked = target === 'users' ? data.sortedUsers()[prng.int(data.users.size)]?.id : pickRecord(target)?.id;
          return picked ?? null;
        });
        for (const spec of data.schemas[resource].fields) {
          if (!spec.def.is_core && prng.chance(0.5)) values[spec.def.api_name] = deps.randomValue(spec, prng, ctx());
        }
        const record = data.create(resource, toWire(data.schemas[resource], values));
        return { kind, resource, id: record.id, movedUpdatedAt: true };
      }
      case 'activity': {
        const resource: ActivityResource = prng.chance(0.5) ? 'meeting-logs' : 'contact-activities';
        const parent = pickRecord(resource === 'meeting-logs' ? 'deals' : 'contacts');
        if (!parent) return null;
        const { activity } = deps.recordActivity(resource, parent.id);
        return { kind, resource, id: activity.id, parentId: parent.id, movedUpdatedAt: true };
      }
      case 'link': {
        const [resource, link] = prng.pick(LINKS);
        const record = pickRecord(resource);
        const spec = data.schemas[resource].get(link);
        if (!record || !spec?.linkTarget) return null;
        const target = spec.linkTarget === 'users' ? data.sortedUsers()[prng.int(data.users.size)]?.id : pickRecord(spec.linkTarget)?.id;
        if (!target || target === record.values[link]) return null;
        data.changeLink(resource, record.id, link, target);
        return { kind, resource, id: record.id, movedUpdatedAt: false };
      }
      case 'summaries': {
        const log = pickRecord('meeting-logs');
        if (!log) return null;
        deps.generateSummaries(log.id);
        return { kind, resource: 'meeting-logs', id: log.id, movedUpdatedAt: false };
      }
      case 'delete': {
        const resource = pickResource(RECORD_RESOURCES);
        const record = resource && pickRecord(resource);
        if (!resource || !record) return null;
        data.delete(resource, record.id);
        return { kind, resource, id: record.id, movedUpdatedAt: false };
      }
    }
  }
}
