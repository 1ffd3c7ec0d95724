import { invalidRequest } from './errors.js';
import type { CorruptedIds, RecordCorruption, RecordResource, RecordView, UserCorruption, UserView } from './types.js';
import { RECORD_CORRUPTIONS, RECORD_RESOURCES, USER_CORRUPTIONS } from './types.js';

/**
 * One invalid record among thousands: chosen records and users are rendered broken in public responses while the
 * stored data (and truth) stays clean, so a client's quarantine can be tested against a known list of ids.
 */

/** `2024-06-03T12:34:56.123456Z` → the same with seconds `60`: a leap second where none exists. */
function leapSecond(iso: string): string {
  return `${iso.slice(0, 17)}60${iso.slice(19)}`;
}

export class Corruptions {
  private readonly records = {} as Record<RecordResource, Map<string, RecordCorruption>>;
  private readonly users = new Map<string, UserCorruption>();

  constructor() {
    for (const resource of RECORD_RESOURCES) this.records[resource] = new Map();
  }

  corruptRecord(resource: RecordResource, id: string, corruption: RecordCorruption): void {
    if (!RECORD_CORRUPTIONS.includes(corruption)) throw invalidRequest(`不明な破損の種類です: ${String(corruption)}`);
    this.records[resource].set(id, corruption);
  }

  repairRecord(resource: RecordResource, id: string): void {
    this.records[resource].delete(id);
  }

  corruptUser(id: string, corruption: UserCorruption): void {
    if (!USER_CORRUPTIONS.includes(corruption)) throw invalidRequest(`不明な破損の種類です: ${String(corruption)}`);
    this.users.set(id, corruption);
  }

  repairUser(id: string): void {
    this.users.delete(id);
  }

  /** Corrupted ids whose record or user still exists, sorted. */
  ids(recordExists: (resource: RecordResource, id: string) => boolean, userExists: (id: string) => boolean): CorruptedIds {
    const records = {} as CorruptedIds['records'];
    for (const resource of RECORD_RESOURCES) {
      records[resource] = [...this.records[resource].keys()].filter((id) => recordExists(resource, id)).sort();
    }
    return { records, users: [...this.users.keys()].filter(userExists).sort() };
  }

  /** The view as the public API sends it: unchanged unless the record is corrupted. */
  record<V extends RecordView>(resource: RecordResource, view: V): V {
    const corruption = this.records[resource].get(view.id);
    if (!corruption) return view;
    switch (corruption) {
      case 'object_property': {
        const first = Object.keys(view.properties)[0] ?? 'name';
        return { ...view, properties: { ...view.properties, [first]: { nested: 1 } as never } };
      }
      case 'short_id':
        return { ...view, id: view.id.slice(0, -1) };
      case 'leap_second':
        return { ...view, updated_at: leapSecond(view.updated_at) };
      case 'space_separator':
        return { ...view, updated_at: `${view.updated_at.slice(0, 10)} ${view.updated_at.slice(11)}` };
      case 'null_property_map':
        return { ...view, properties: null as never };
    }
  }

  user(view: UserView): UserView {
    const corruption = this.users.get(view.id);
    if (corruption === 'null_name') return { ...view, name: null as never };
    if (corruption === 'short_id') return { ...view, id: view.id.slice(0, -1) };
    return view;
  }
}
