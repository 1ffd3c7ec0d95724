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

/**
 * Where a walk stands: committed together with the rows of the page it follows. A walk is one or more passes over
 * the same window (`updatedAfter`); a pass that saw the list move under it is followed by another.
 */
export interface WalkCheckpoint {
  /** `paging.next.after` of the last committed page; null once the pass is complete. */
  cursor: string | null;
  /**
   * The fingerprint of the key whose answer named `cursor`, with a pool of keys (a service may accept a cursor only
   * on its own key). @defaultValue null
   */
  cursorKey?: string | null;
  /** The `updated_after` the walk was started with (ISO), or null for a full walk. Resumes and later passes reuse it. */
  updatedAfter: string | null;
  /** Server time (from the `Date` header) at which the walk's first pass started. */
  startedAt: string;
  mode: WalkMode;
  /** The pass under way, from 1. @defaultValue 1 */
  pass?: number;
  /** Server time at which this pass started. @defaultValue startedAt */
  passStartedAt?: string;
  /** This pass has seen a sign that the list moved under it (see `PassSignals`). @defaultValue false */
  dirty?: boolean;
  /** The largest `updated_at` this pass received so far (as sent), or null. @defaultValue null */
  maxUpdatedAt?: string | null;
  /** The service sent no `Date` header: the walk's times come from the local clock. @defaultValue false */
  localClock?: boolean;
  /**
   * Records the walk received before this checkpoint, over every run and pass: a resumed walk counts on from them.
   * @defaultValue 0
   */
  received?: number;
}

/**
 * A record the service sent that cannot be mirrored as it is (an invalid id, an object-valued property, a
 * timestamp no database can hold). Kept verbatim in quarantine with the reason; retried by every walk that sees it.
 */
export interface RejectedRecord {
  /** The record's id when it carries a string one (possibly malformed), else null. */
  id: string | null;
  /** The element exactly as received, as JSON text. */
  raw: string;
  /** What is wrong, naming the field: `properties.amount: must be a string, a finite number, a boolean or null`. */
  reason: string;
}

export type WalkMode = 'incremental' | 'full';
