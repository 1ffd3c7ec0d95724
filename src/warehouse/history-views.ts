/**
 * Views over the SCD2 history (`history.ts`), rebuilt with the other views (`views.ts`):
 * - `<table>_history_view`: every version, columns named by display name, typed by property type from the
 *   version's `properties`, select values as labels, plus the version's validity and provenance;
 * - `changes`: the change feed, one row per version of every resource in commit order (`change_seq`): what kind
 *   of change it was and which properties changed, with the old and new properties.
 * Pure SQL builders: every name is quoted, api names go in as literals, numbers are ours.
 */
import type { RecordResourceName } from '../core/resources.js';
import type { SqlType } from './column-types.js';
import { historyTableName } from './history.js';
import { quoteIdentifier, quoteLiteral } from './identifiers.js';

export const CHANGES_VIEW = 'changes';

export function historyViewName(table: string): string {
  return `${table}_history_view`;
}

/** The history view's own columns, after the properties: no property alias may take these names. */
export const HISTORY_VIEW_COLUMNS = [
  'valid_from',
  'valid_to',
  'is_current',
  'valid_from_basis',
  'source',
  'run_id',
  'change_seq',
  'deleted',
  'observed_at',
] as const;

/** A property as the history view shows it. */
export interface HistoryViewProperty {
  apiName: string;
  /** The view's column name (unique, see `viewAliases`). */
  alias: string;
  sqlType: SqlType;
  /** Set for select properties with options: the `property_options.property_key` to take labels from. */
  optionKey: number | null;
}

/** SQL text of a string: a literal, with `chr(0)` for NUL characters (which a DuckDB literal cannot hold). */
function textSql(text: string): string {
  return text.split('\0').map(quoteLiteral).join(' || chr(0) || ');
}

/** A JSON path naming one top-level key: the key itself, unless DuckDB would read it as a path. */
function keyPath(apiName: string): string {
  return textSql(/^[$/]/.test(apiName) ? `$."${apiName.replaceAll('"', '\\"')}"` : apiName);
}

/** The property's value in a version, typed like the live table's column (a value that does not fit is NULL). */
function typedValue(properties: string, p: HistoryViewProperty): string {
  const path = keyPath(p.apiName);
  if (p.sqlType === 'JSON') return `json_extract(${properties}, ${path})`;
  const text = `json_extract_string(${properties}, ${path})`;
  return p.sqlType === 'VARCHAR' ? text : `TRY_CAST(${text} AS ${p.sqlType})`;
}

/** SQL of `<table>_history_view`. */
export function historyViewSql(table: string, properties: readonly HistoryViewProperty[]): string {
  const select: string[] = ['h.id', 'h.created_at', 'h.updated_at'];
  const joins: string[] = [];
  properties.forEach((p, i) => {
    const value = typedValue('h.properties', p);
    const alias = quoteIdentifier(p.alias);
    if (p.optionKey === null) {
      select.push(`${value} AS ${alias}`);
      return;
    }
    const o = quoteIdentifier(`o${i}`);
    // A value outside the current options shows as itself, as in the live view.
    select.push(`coalesce(${o}.label, ${value}) AS ${alias}`);
    joins.push(`LEFT JOIN property_options AS ${o} ON ${o}.property_key = ${Math.trunc(p.optionKey)} AND ${o}.value = ${value}`);
  });
  select.push(...HISTORY_VIEW_COLUMNS.map((c) => `h.${quoteIdentifier(c)}`));
  return [
    `CREATE OR REPLACE VIEW ${quoteIdentifier(historyViewName(table))} AS`,
    `SELECT ${select.join(',\n  ')}`,
    `FROM ${quoteIdentifier(historyTableName(table))} AS h`,
    ...joins,
  ].join('\n');
}

/**
 * SQL of the `changes` view over the history tables of `resources` (resource → table). Kinds: `insert` (an id's
 * first version), `delete`, `restore` (the first version after a deleted one), `update`. `changed_properties`: the
 * properties whose value differs from the previous version's (all present ones for an insert; none for a delete).
 */
export function changesViewSql(resources: readonly { resource: RecordResourceName; table: string }[]): string {
  const versions = resources.map(({ resource, table }, i) => {
    const w = `w${i}`; // a named window is named once per query, union or not
    return `SELECT ${quoteLiteral(resource)} AS resource, id, change_seq, valid_from, observed_at, source, run_id, deleted, properties,
         lag(properties) OVER ${w} AS old_properties, lag(deleted) OVER ${w} AS was_deleted, lag(change_seq) OVER ${w} AS previous_seq
       FROM ${quoteIdentifier(historyTableName(table))} WINDOW ${w} AS (PARTITION BY id ORDER BY change_seq)`;
  });
  const asMap = (json: string) => `CAST(${json} AS MAP(VARCHAR, JSON))`;
  return `CREATE OR REPLACE VIEW ${quoteIdentifier(CHANGES_VIEW)} AS
WITH versions AS (
${versions.join('\n  UNION ALL\n')}
)
SELECT change_seq, resource, id,
  CASE WHEN previous_seq IS NULL THEN 'insert' WHEN deleted THEN 'delete' WHEN was_deleted THEN 'restore' ELSE 'update' END AS kind,
  valid_from AS changed_at, observed_at AS committed_at, source, run_id,
  old_properties, properties AS new_properties,
  CASE WHEN deleted THEN CAST([] AS VARCHAR[]) ELSE list_sort(list_filter(
    list_distinct(coalesce(json_keys(old_properties), []) || coalesce(json_keys(properties), [])),
    k -> ${asMap('old_properties')}[k] IS DISTINCT FROM ${asMap('properties')}[k])) END AS changed_properties
FROM versions`;
}
