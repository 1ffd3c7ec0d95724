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
import { historyTableName } from './history-names.js';
import { quoteIdentifier, quoteLiteral } from './identifiers.js';
import { optionLabels } from './option-labels.js';

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

/** The history table's properties, read once per version: one list of every text path, one of every JSON path. */
const TEXTS = '_property_texts';
const JSONS = '_property_json';

/**
 * SQL of `<table>_history_view`. A version's `properties` is read by one `json_extract_string` and one
 * `json_extract` with a list of paths, not a call per property: each call holds memory of its own.
 */
export function historyViewSql(table: string, properties: readonly HistoryViewProperty[]): string {
  const select: string[] = ['h.id', 'h.created_at', 'h.updated_at'];
  const labels = optionLabels(properties.map((p) => p.optionKey));
  const texts: string[] = [];
  const jsons: string[] = [];
  for (const p of properties) {
    // The property's value in a version, typed like the live table's column (a value that does not fit is NULL).
    const paths = p.sqlType === 'JSON' ? jsons : texts;
    paths.push(keyPath(p.apiName));
    const value = `h.${quoteIdentifier(p.sqlType === 'JSON' ? JSONS : TEXTS)}[${paths.length}]`;
    const typed = p.sqlType === 'JSON' || p.sqlType === 'VARCHAR' ? value : `TRY_CAST(${value} AS ${p.sqlType})`;
    // A value outside the current options shows as itself, as in the live view.
    const shown = p.optionKey === null ? typed : `coalesce(${labels.lookup(p.optionKey, typed)}, ${typed})`;
    select.push(`${shown} AS ${quoteIdentifier(p.alias)}`);
  }
  select.push(...HISTORY_VIEW_COLUMNS.map((c) => `h.${quoteIdentifier(c)}`));
  const extracted = [
    ...(texts.length === 0 ? [] : [`json_extract_string(properties, [${texts.join(', ')}]) AS ${quoteIdentifier(TEXTS)}`]),
    ...(jsons.length === 0 ? [] : [`json_extract(properties, [${jsons.join(', ')}]) AS ${quoteIdentifier(JSONS)}`]),
  ];
  const history = quoteIdentifier(historyTableName(table));
  return [
    `CREATE OR REPLACE VIEW ${quoteIdentifier(historyViewName(table))} AS`,
    `SELECT ${select.join(',\n  ')}`,
    extracted.length === 0 ? `FROM ${history} AS h` : `FROM (SELECT *, ${extracted.join(',\n  ')}\nFROM ${history}) AS h`,
    ...(labels.join === '' ? [] : [labels.join]),
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
