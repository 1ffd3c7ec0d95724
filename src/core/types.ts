/**
 * The service's data as the spec defines it. Shared by the API client (which validates and produces it)
 * and the warehouse (which stores it); neither knows about the other.
 */

/** A property value is a string, a number, a boolean, or null (spec: Property value). */
export type PropertyValue = string | number | boolean | null;

/** The common record envelope. Timestamps stay strings: they may carry offsets and microseconds. */
export interface ServiceRecord {
  id: string;
  properties: Record<string, PropertyValue>;
  created_at: string;
  updated_at: string;
}

export interface SummarySelection {
  value: string;
  level: number;
  order: number;
}

export interface MeetingLogSummary {
  summary_type: string;
  result_type: string;
  text: string | null;
  selections: SummarySelection[];
  reason: string;
  status: string;
  updated_at: string;
}

/** The single-record view of a meeting log: the only place `summaries` appear. */
export interface MeetingLogRecord extends ServiceRecord {
  summaries: MeetingLogSummary[];
}

export interface ServiceUser {
  id: string;
  email: string;
  name: string;
  is_active: boolean;
}

export interface PropertyOption {
  value: string;
  label: string;
}

export interface PropertyDefinition {
  api_name: string;
  display_name: string;
  /** `text`, `number`, `date`, `datetime`, `boolean`, `select`, or a type the spec does not name. */
  property_type: string;
  is_core: boolean;
  is_required_on_create: boolean;
  /** Empty when the service sends none. */
  options: PropertyOption[];
}

/** Where a walk stands: committed together with the rows of the page it follows. */
export interface WalkCheckpoint {
  /** `paging.next.after` of the last committed page; null once the walk is complete. */
  cursor: string | null;
  /** The `updated_after` the walk was started with (ISO), or null for a full walk. Resumes must reuse it. */
  updatedAfter: string | null;
  /** Server time (from the `Date` header) at which the walk started: the next watermark. */
  startedAt: string;
  mode: WalkMode;
}

export type WalkMode = 'incremental' | 'full';
