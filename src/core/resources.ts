/**
 * A resource is data, not a subclass: its name as the service spells it in paths, the warehouse table
 * that mirrors it, and the quirks the sync must honour.
 */
export type ResourceName = 'deals' | 'companies' | 'contacts' | 'meeting-logs' | 'contact-activities' | 'users';

export type RecordResourceName = Exclude<ResourceName, 'users'>;

export interface ResourceDescriptor {
  readonly name: ResourceName;
  /** Path segment under /v1/, always used with a trailing slash. */
  readonly path: string;
  /** DuckDB table that mirrors the resource. */
  readonly table: string;
  /** `record` resources have the common envelope and property definitions; users have their own shape. */
  readonly shape: 'record' | 'user';
  /** Users have no `updated_at`: refreshed completely every run. */
  readonly incremental: boolean;
  /** Summaries exist only on the single-record view: one GET per new or changed log. */
  readonly hasSummaries: boolean;
}

export const RESOURCES: readonly ResourceDescriptor[] = [
  { name: 'deals', path: 'deals', table: 'deals', shape: 'record', incremental: true, hasSummaries: false },
  { name: 'companies', path: 'companies', table: 'companies', shape: 'record', incremental: true, hasSummaries: false },
  { name: 'contacts', path: 'contacts', table: 'contacts', shape: 'record', incremental: true, hasSummaries: false },
  { name: 'meeting-logs', path: 'meeting-logs', table: 'meeting_logs', shape: 'record', incremental: true, hasSummaries: true },
  {
    name: 'contact-activities',
    path: 'contact-activities',
    table: 'contact_activities',
    shape: 'record',
    incremental: true,
    hasSummaries: false,
  },
  { name: 'users', path: 'users', table: 'users', shape: 'user', incremental: false, hasSummaries: false },
];

export const RESOURCE_NAMES: readonly ResourceName[] = RESOURCES.map((r) => r.name);

export const RECORD_RESOURCE_NAMES: readonly RecordResourceName[] = RESOURCES.filter((r) => r.shape === 'record').map(
  (r) => r.name as RecordResourceName,
);

export function isResourceName(value: string): value is ResourceName {
  return (RESOURCE_NAMES as readonly string[]).includes(value);
}

export function resourceDescriptor(name: ResourceName): ResourceDescriptor {
  const found = RESOURCES.find((r) => r.name === name);
  if (!found) throw new Error(`unknown resource ${name}`);
  return found;
}

/** A record's or user's id as the spec fixes it: 18 alphanumeric characters. */
export const RECORD_ID_PATTERN = /^[A-Za-z0-9]{18}$/;
