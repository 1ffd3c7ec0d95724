import { coreValues, generatedSummary, personName, randomMicros, randomValue, SUMMARY_TYPES, summaryStatusName } from './content.js';
import type { SummaryState } from './content.js';
import type { Prng } from './prng.js';
import { createPrng, deriveSeed } from './prng.js';
import type { StoredRecord } from './record-store.js';
import type { SalesData, StoredSummary } from './sales-data.js';
import { jstFor } from './sales-data.js';
import { MICROS_PER_DAY } from './timestamps.js';
import type { RecordResource, SimulatorSizes } from './types.js';
import type { StoredValue } from './values.js';

/**
 * Deterministic generation of an organization's data: same seed, sizes and epoch ⇒ identical ids, values and
 * timestamps. Each resource draws from its own stream. Returns the newest timestamp generated (µs), the floor of
 * the change clock.
 */
export function seedData(data: SalesData, sizes: SimulatorSizes, seed: number, epochMs: number): number {
  const epoch = epochMs * 1000;
  const start = epoch - 400 * MICROS_PER_DAY;
  let newest = start;
  const note = (micros: number): void => {
    if (micros > newest) newest = micros;
  };

  const userPrng = createPrng(deriveSeed(seed, 'users'));
  for (let i = 0; i < sizes.users; i++) {
    const person = personName(userPrng);
    data.insertUser({
      id: data.newId(userPrng),
      email: person.email,
      name: `${person.last} ${person.first}`,
      isActive: !userPrng.chance(0.15),
    });
  }
  const userIds = data.sortedUsers().map((u) => u.id);

  const ids: Record<RecordResource, string[]> = {
    deals: [],
    companies: [],
    contacts: [],
    'meeting-logs': [],
    'contact-activities': [],
  };

  const generate = (resource: RecordResource, count: number, parentOf?: (prng: Prng) => StoredRecord | null): void => {
    const prng = createPrng(deriveSeed(seed, resource));
    const schema = data.schemas[resource];
    const customs = schema.fields.filter((f) => !f.def.is_core);
    let previous: StoredRecord | null = null;
    for (let i = 0; i < count; i++) {
      const parent = parentOf ? parentOf(prng) : null;
      const from = parent ? parent.createdAt : start;
      const createdAt = randomMicros(prng, from, epoch - MICROS_PER_DAY);
      let updatedAt = prng.chance(0.4) ? createdAt : randomMicros(prng, createdAt, epoch);
      // Bulk imports: a few records share one updated_at to the microsecond (the keyset breaks ties on id).
      if (previous && previous.updatedAt >= createdAt && prng.chance(0.03)) updatedAt = previous.updatedAt;
      const ctx = { fromMicros: createdAt - 30 * MICROS_PER_DAY, toMicros: updatedAt };
      const core = coreValues(resource, prng, ctx, (target) => {
        if (parent && (target === 'deals' || target === 'contacts')) return parent.id;
        const pool = target === 'users' ? userIds : ids[target];
        return pool.length > 0 ? prng.pick(pool) : null;
      });
      const values: Record<string, StoredValue> = core;
      if (resource === 'deals' || resource === 'contacts') {
        values['activity_count'] = 0;
        values['last_activity_at'] = null;
      }
      if (resource === 'deals') {
        const stage = values['stage'];
        values['win_probability'] = stage === 'stg_won' ? 100 : stage === 'stg_lost' ? 0 : prng.chance(0.9) ? prng.between(5, 95) : null;
      }
      if (resource === 'companies') values['health_score'] = prng.chance(0.9) ? prng.between(0, 1000) / 10 : null;
      for (const spec of customs) {
        const roll = prng.next();
        // ~25% never had a value (no stored value record), ~5% were cleared (stored null).
        if (roll < 0.25) continue;
        values[spec.def.api_name] = roll < 0.3 ? null : randomValue(spec, prng, ctx);
      }
      const id = data.newId(prng);
      const record: StoredRecord = { id, values, createdAt, updatedAt, jst: jstFor(id) };
      data.insertSeeded(resource, record);
      ids[resource].push(id);
      note(updatedAt);
      previous = record;
    }
  };

  generate('companies', sizes.companies);
  generate('deals', sizes.deals);
  generate('contacts', sizes.contacts);

  // Activities: a skewed choice of parents (some deals have many logs), each moving the parent's aggregate.
  const skewedParent =
    (resource: 'deals' | 'contacts') =>
    (prng: Prng): StoredRecord | null => {
      const pool = ids[resource];
      if (pool.length === 0) return null;
      const index = Math.floor(pool.length * prng.next() ** 2);
      return data.stores[resource].get(pool[index] as string) ?? null;
    };
  if (ids.deals.length > 0) generate('meeting-logs', sizes.meetingLogs, skewedParent('deals'));
  if (ids.contacts.length > 0) generate('contact-activities', sizes.contactActivities, skewedParent('contacts'));

  for (const [child, parentResource, link, dateField] of [
    ['meeting-logs', 'deals', 'deal_id', 'meeting_date'],
    ['contact-activities', 'contacts', 'contact_id', 'activity_date'],
  ] as const) {
    for (const activity of data.stores[child].values()) {
      const parent = data.stores[parentResource].get(activity.values[link] as string);
      if (!parent) continue;
      parent.values['activity_count'] = (parent.values['activity_count'] as number) + 1;
      const at = (activity.values[dateField] as number | null) ?? activity.createdAt;
      const last = parent.values['last_activity_at'];
      if (typeof last !== 'number' || at > last) parent.values['last_activity_at'] = at;
      // Recording the activity moved the parent's updated_at.
      if (activity.createdAt > parent.updatedAt) parent.updatedAt = activity.createdAt;
    }
  }

  const summaryPrng = createPrng(deriveSeed(seed, 'summaries'));
  for (const log of data.stores['meeting-logs'].values()) {
    const roll = summaryPrng.next();
    if (roll < 0.3) continue; // not generated yet
    const status: SummaryState = roll < 0.4 ? 'pending' : roll < 0.42 ? 'failed' : 'completed';
    const kinds = SUMMARY_TYPES.filter((_, i) => i === 0 || summaryPrng.chance(0.6));
    const summaries: StoredSummary[] = kinds.map((kind) => ({
      ...generatedSummary(summaryPrng, kind, status, summaryStatusName(data.summaryStatuses, status)),
      updatedAt: randomMicros(summaryPrng, log.createdAt, Math.max(log.createdAt, epoch)),
    }));
    data.summaries.set(log.id, summaries);
    for (const s of summaries) note(s.updatedAt);
  }
  return newest;
}
