/**
 * A table's fingerprint: how many records it holds and a sum of a hash of each one's id and properties, the same
 * whatever the order the records come in. The simulator's truth and a synced file give equal fingerprints when
 * the file holds every record with exactly the properties the service has, so a bench can prove a large sync
 * exact without holding both sides at once.
 */
import { createHash } from 'node:crypto';
import { RECORD_RESOURCE_NAMES, resourceDescriptor } from '../src/core/resources.js';
import type { Truth } from '../src/simulator/index.js';

export interface Fingerprint {
  records: number;
  /** The sum of the records' hashes, mod 2^64, in hex. */
  sum: string;
}

const MOD = 1n << 64n;

/** JSON text of `value` with every object's keys sorted: equal values, equal text. Pure. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** Builds a fingerprint record by record. */
export class FingerprintBuilder {
  private records = 0;
  private sum = 0n;

  add(id: string, properties: unknown): void {
    const digest = createHash('sha256').update(id).update('\n').update(canonicalJson(properties)).digest();
    this.sum = (this.sum + digest.readBigUInt64BE(0)) % MOD;
    this.records += 1;
  }

  result(): Fingerprint {
    return { records: this.records, sum: this.sum.toString(16) };
  }
}

/** The fingerprint of `records`. Pure. */
export function fingerprintOf(records: Iterable<{ id: string; properties: unknown }>): Fingerprint {
  const builder = new FingerprintBuilder();
  for (const record of records) builder.add(record.id, record.properties);
  return builder.result();
}

/** Each record table's fingerprint of the simulator's truth, by table name. */
export function truthFingerprints(truth: Truth): Record<string, Fingerprint> {
  return Object.fromEntries(
    RECORD_RESOURCE_NAMES.map((resource) => [resourceDescriptor(resource).table, fingerprintOf(truth.records[resource])]),
  );
}
