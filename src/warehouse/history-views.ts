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
  /** A JSON property shown as text (labelled): DuckDB's text of the value, as the live view reads its column. */
  json?: true;
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
/** The JSON types of the VARCHAR properties' values, read only for a version that may hold a number with an exponent. */
const KINDS = '_property_kinds';
/**
 * A number with a positive exponent as a member's value (`"k":1e21`, `"k": 1E+21`): where `KINDS` is read. A text
 * holding one (`"x:1e5"`) reads it for nothing; a number without one never needs it.
 */
const MAY_HOLD_EXPONENT = quoteLiteral(String.raw`:[ \t\n\r]*-?[0-9]+(\.[0-9]+)?[eE]\+?[0-9]`);

/*
 * The live table's typed cells come from `toColumnValue` (rows.ts); the history view makes the same cells from the
 * version's `properties` in SQL, by the same rules. DuckDB's own casts accept other texts (`TRY_CAST('yes' AS
 * BOOLEAN)`, a date-time as a DATE, `NaN`, no offset read in the session's time zone), so each type checks the text
 * first (test/warehouse/history-view-cells.test.ts compares the two value by value). Each rule is one lambda over
 * the slice of the list its properties' values are in: written once per query, not once per property, since every
 * pattern is compiled where it is written (300 datetime properties took 1.2 s to plan, one rule per column).
 */

/** What JavaScript's `trim()` strips (its WhiteSpace and LineTerminator), asked of the engine `toColumnValue` runs in. */
const JS_SPACE = `[${Array.from({ length: 0x10000 }, (_, code) => code)
  .filter((code) => String.fromCharCode(code).trim() === '')
  .map((code) => `\\x{${code.toString(16)}}`)
  .join('')}]`;

/** `value` as JavaScript's `trim()` leaves it. A pattern: DuckDB's `trim(text, characters)` took ten times as long. */
function jsTrimmed(value: string): string {
  return `regexp_replace(${value}, ${quoteLiteral(`^${JS_SPACE}+|${JS_SPACE}+$`)}, '', 'g')`;
}

/** `toColumnValue`'s decimal (its DECIMAL), for RE2. */
const DECIMAL = quoteLiteral(String.raw`[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?`);

/**
 * A number, after trim(). Out of range (`1e999`) is NULL, as in JavaScript; `-0` is 0, as the live row's JSON writes
 * it (`+ 0` makes IEEE's -0 a 0). A JSON number's text is a decimal as it is: only other texts are trimmed.
 */
function doublesSql(texts: string): string {
  const number = (text: string) =>
    `CASE WHEN regexp_full_match(${text}, ${DECIMAL}) THEN nullif(nullif(TRY_CAST(${text} AS DOUBLE), CAST('inf' AS DOUBLE)), CAST('-inf' AS DOUBLE)) + 0 END`;
  return `list_transform(${texts}, v -> CASE WHEN regexp_full_match(v, ${DECIMAL}) THEN ${number('v')} ELSE ${number(jsTrimmed('v'))} END)`;
}

/** JSON true/false, or the text 'true'/'false' in any case after trim() (a JSON boolean's text is one of them). */
function booleansSql(texts: string): string {
  const word = `CASE WHEN v = 'true' OR v = 'false' THEN v ELSE lower(${jsTrimmed('v')}) END`;
  return `list_transform(${texts}, v -> CASE ${word} WHEN 'true' THEN true WHEN 'false' THEN false END)`;
}

/** A strict `YYYY-MM-DD` calendar date (`parseDateDays`); DuckDB's cast checks the calendar, year 0000 included. */
function datesSql(texts: string): string {
  return `list_transform(${texts}, v -> CASE WHEN regexp_full_match(v, '[0-9]{4}-[0-9]{2}-[0-9]{2}') THEN TRY_CAST(v AS DATE) END)`;
}

/**
 * `canonicalInstant`'s grammar (time.ts), its field ranges written in: DuckDB's cast takes hour 24 and offsets
 * past 23:59, and none of `t`, `z`, `,`, a time without seconds or a `+HHMM` offset, so the text is rebuilt.
 */
const INSTANT = quoteLiteral(
  String.raw`^([0-9]{4,6})-([0-9]{2})-([0-9]{2})[Tt ]([01][0-9]|2[0-3]):([0-5][0-9])(?::([0-5][0-9])(?:[.,]([0-9]+))?)?` +
    String.raw`(?:[Zz]|([+-])([01][0-9]|2[0-3])(?::?([0-5][0-9]))?)?$`,
);
const INSTANT_FIELDS = "['y', 'mo', 'd', 'h', 'mi', 's', 'f', 'sign', 'oh', 'om']";
/** The service's own form, which DuckDB's cast reads as `canonicalInstant` does: no rebuilding (a third of the time). */
const SERVICE_INSTANT = quoteLiteral(
  String.raw`[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])`,
);

/**
 * An instant as `canonicalInstant` reads it: seconds and offset minutes default to 00, the fraction is cut to
 * microseconds, and the offset is written out (none means UTC, not the session's time zone).
 */
function instantsSql(texts: string): string {
  const orZero = (field: string) => `CASE WHEN r.${field} = '' THEN '00' ELSE r.${field} END`;
  const offset = `CASE WHEN r.sign = '' THEN '+00' ELSE r.sign || r.oh END || ':' || ${orZero('om')}`;
  const canonical = `r.y || '-' || r.mo || '-' || r.d || ' ' || r.h || ':' || r.mi || ':' || ${orZero('s')} || '.' || rpad(left(r.f, 6), 6, '0') || ${offset}`;
  const rebuilt = `list_transform([regexp_extract(v, ${INSTANT}, ${INSTANT_FIELDS})], r -> CASE WHEN r.y <> '' THEN TRY_CAST(${canonical} AS TIMESTAMPTZ) END)[1]`;
  const read = `list_transform(${texts}, v -> CASE WHEN regexp_full_match(v, ${SERVICE_INSTANT}) THEN TRY_CAST(v AS TIMESTAMPTZ) ELSE ${rebuilt} END)`;
  // Before year 0000 in UTC (an offset moved a date of year 0000 there) the live column holds nothing either.
  return `list_transform(${read}, t -> CASE WHEN t >= TIMESTAMPTZ '0000-01-01 00:00:00+00' THEN t END)`;
}

/**
 * A number's text as JavaScript's `String` writes it, where DuckDB's differs: only in a positive exponent's sign.
 * `KINDS` is NULL for a version without a number that has one.
 */
function varcharsSql(texts: string): string {
  const kind = `h.${quoteIdentifier(KINDS)}`;
  const signed = `list_transform(${texts}, (v, i) -> CASE WHEN ${kind}[i] = 'DOUBLE' THEN regexp_replace(v, 'e([0-9])', ${quoteLiteral(String.raw`e+\1`)}) ELSE v END)`;
  return `CASE WHEN ${kind} IS NULL THEN ${texts} ELSE ${signed} END`;
}

/** The control characters whose `\u00XX` escape has a letter: yyjson writes it in upper case, JSON.stringify in lower. */
const LOWER_ESCAPES = Array.from({ length: 0x20 }, (_, code) => JSON.stringify(String.fromCharCode(code)).slice(1, -1)).filter(
  (escape) => escape.length === 6 && /[a-f]/.test(escape),
);

/** A yyjson number with a positive exponent (`1e21`; JavaScript `1e+21`). */
const UNSIGNED_EXPONENT = quoteLiteral(String.raw`^-?[0-9](\.[0-9]+)?e[0-9]`);
const ESCAPED_BACKSLASH = quoteLiteral('\\\\');

/**
 * A JSON value's text as `JSON.stringify` writes it, from DuckDB's (yyjson's): JSON null is no value, an exponent
 * has its sign, an escape's hex is lower case. The text is cut at each escaped backslash first: what follows one
 * is text, not an escape.
 */
function jsonsSql(jsons: string): string {
  const lowered = LOWER_ESCAPES.reduce(
    (piece, escape) => `replace(${piece}, ${quoteLiteral(`\\u${escape.slice(2).toUpperCase()}`)}, ${quoteLiteral(escape)})`,
    'piece',
  );
  const pieces = `list_transform(string_split(j, ${ESCAPED_BACKSLASH}), piece -> ${lowered})`;
  const json = [
    `CASE WHEN j = 'null' THEN NULL`,
    `WHEN regexp_matches(j, ${UNSIGNED_EXPONENT}) THEN CAST(replace(j, 'e', 'e+') AS JSON)`,
    `WHEN contains(j, ${quoteLiteral('\\u00')}) THEN CAST(array_to_string(${pieces}, ${ESCAPED_BACKSLASH}) AS JSON)`,
    `ELSE j END`,
  ].join(' ');
  return `list_transform(${jsons}, j -> ${json})`;
}

/** How a property's values are read: a text rule or the JSON one, or DuckDB's text as it is (`json`, see there). */
type Reading = SqlType | 'TEXT';

/** Each reading's list of typed values (a column of the view's inner query), from its slice of the texts or JSONs. */
const READINGS: readonly { reading: Reading; column: string; typed: ((values: string) => string) | null }[] = [
  { reading: 'DOUBLE', column: '_doubles', typed: doublesSql },
  { reading: 'BOOLEAN', column: '_booleans', typed: booleansSql },
  { reading: 'DATE', column: '_dates', typed: datesSql },
  { reading: 'TIMESTAMPTZ', column: '_instants', typed: instantsSql },
  { reading: 'VARCHAR', column: '_varchars', typed: varcharsSql },
  { reading: 'TEXT', column: TEXTS, typed: null },
  { reading: 'JSON', column: '_jsons', typed: jsonsSql },
];

function readingOf(p: HistoryViewProperty): Reading {
  return p.json ? 'TEXT' : p.sqlType;
}

/** What the view's inner queries read: the paths of each list, each reading's typed list, each property's cell. */
interface Reads {
  texts: string[];
  jsons: string[];
  /** The VARCHAR readings' paths, in their slice's order: `KINDS`. */
  varchars: string[];
  /** `<typed list> AS <column>`, one per reading that has properties and a rule. */
  typedLists: string[];
  /** Each property's cell, in `properties`' order: an element of its reading's list. */
  cells: string[];
}

/** The paths go in by reading, so each rule takes one slice of the texts (or the JSONs). */
function readsOf(properties: readonly HistoryViewProperty[]): Reads {
  const reads: Reads = { texts: [], jsons: [], varchars: [], typedLists: [], cells: [] };
  for (const { reading, column, typed } of READINGS) {
    const group = [...properties.keys()].filter((i) => readingOf(properties[i]!) === reading);
    if (group.length === 0) continue;
    const paths = reading === 'JSON' ? reads.jsons : reads.texts;
    const from = paths.length;
    paths.push(...group.map((i) => keyPath(properties[i]!.apiName)));
    if (reading === 'VARCHAR') reads.varchars.push(...paths.slice(from));
    const source = `h.${quoteIdentifier(reading === 'JSON' ? JSONS : TEXTS)}`;
    if (typed !== null) reads.typedLists.push(`${typed(`${source}[${from + 1}:${paths.length}]`)} AS ${quoteIdentifier(column)}`);
    group.forEach((i, n) => (reads.cells[i] = `h.${quoteIdentifier(column)}[${typed === null ? from + n + 1 : n + 1}]`));
  }
  return reads;
}

/**
 * SQL of `<table>_history_view`. A version's `properties` is read by one `json_extract_string` and one
 * `json_extract` with a list of paths, not a call per property: each call holds memory of its own. The VARCHAR
 * properties' JSON types (`json_type`, one more call) are read only for a version holding a number with an
 * exponent: its text may need the exponent's sign, where a text like `1e21` must keep it as it is.
 */
export function historyViewSql(table: string, properties: readonly HistoryViewProperty[]): string {
  const labels = optionLabels(properties.map((p) => p.optionKey));
  const { texts, jsons, varchars, typedLists, cells } = readsOf(properties);
  const select: string[] = ['h.id', 'h.created_at', 'h.updated_at'];
  properties.forEach((p, i) => {
    // The property's value in a version, typed like the live table's column (a value that does not fit is NULL).
    const typed = cells[i]!;
    // A value outside the current options shows as itself, as in the live view.
    const shown = p.optionKey === null ? typed : labels.shown(p.optionKey, typed);
    select.push(`${shown} AS ${quoteIdentifier(p.alias)}`);
  });
  select.push(...HISTORY_VIEW_COLUMNS.map((c) => `h.${quoteIdentifier(c)}`));
  const kinds = `CASE WHEN regexp_matches(properties, ${MAY_HOLD_EXPONENT}) THEN json_type(properties, [${varchars.join(', ')}]) END`;
  const extracted = [
    ...(texts.length === 0 ? [] : [`json_extract_string(properties, [${texts.join(', ')}]) AS ${quoteIdentifier(TEXTS)}`]),
    ...(jsons.length === 0 ? [] : [`json_extract(properties, [${jsons.join(', ')}]) AS ${quoteIdentifier(JSONS)}`]),
    ...(varchars.length === 0 ? [] : [`${kinds} AS ${quoteIdentifier(KINDS)}`]),
  ];
  const history = quoteIdentifier(historyTableName(table));
  const read = `(SELECT *, ${extracted.join(',\n  ')}\nFROM ${history}) AS h`;
  return [
    `CREATE OR REPLACE VIEW ${quoteIdentifier(historyViewName(table))} AS`,
    `SELECT ${select.join(',\n  ')}`,
    extracted.length === 0 ? `FROM ${history} AS h` : `FROM (SELECT ${['h.*', ...typedLists].join(',\n  ')}\nFROM ${read}) AS h`,
    ...(labels.join === '' ? [] : [labels.join]),
  ].join('\n');
}

/** A resource whose record table has a history (`<table>_history`). */
export interface FeedResource {
  resource: RecordResourceName;
  table: string;
}

/** Every version of `resources`' records, as the feed reads them: one union over their history views. */
function versionsSql(resources: readonly FeedResource[], columns: string): string {
  return resources
    .map(
      ({ resource, table }) => `SELECT ${quoteLiteral(resource)} AS resource, ${columns} FROM ${quoteIdentifier(historyTableName(table))}`,
    )
    .join('\n  UNION ALL\n');
}

const FEED_VERSION_COLUMNS = 'id, change_seq, valid_from, observed_at, source, run_id, deleted, properties';
/** Each version's previous one, through the window named `w` (an id's versions in change_seq order). */
const previous = (w: string) =>
  `lag(properties) OVER ${w} AS old_properties, lag(deleted) OVER ${w} AS was_deleted, lag(change_seq) OVER ${w} AS previous_seq`;

/** The feed's columns, from versions with their previous version's `old_properties`, `was_deleted`, `previous_seq`. */
function feedSelect(from: string): string {
  const asMap = (json: string) => `CAST(${json} AS MAP(VARCHAR, JSON))`;
  return `SELECT change_seq, resource, id,
  CASE WHEN previous_seq IS NULL THEN 'insert' WHEN deleted THEN 'delete' WHEN was_deleted THEN 'restore' ELSE 'update' END AS kind,
  valid_from AS changed_at, observed_at AS committed_at, source, run_id,
  old_properties, properties AS new_properties,
  CASE WHEN deleted THEN CAST([] AS VARCHAR[]) ELSE list_sort(list_filter(
    list_distinct(coalesce(json_keys(old_properties), []) || coalesce(json_keys(properties), [])),
    k -> ${asMap('old_properties')}[k] IS DISTINCT FROM ${asMap('properties')}[k])) END AS changed_properties
FROM ${from}`;
}

/**
 * SQL of the `changes` view over the history tables of `resources` (resource → table). Kinds: `insert` (an id's
 * first version), `delete`, `restore` (the first version after a deleted one), `update`. `changed_properties`: the
 * properties whose value differs from the previous version's (all present ones for an insert; none for a delete).
 */
export function changesViewSql(resources: readonly FeedResource[]): string {
  const versions = resources.map(({ resource, table }, i) => {
    const w = `w${i}`; // a named window is named once per query, union or not
    return `SELECT ${quoteLiteral(resource)} AS resource, ${FEED_VERSION_COLUMNS}, ${previous(w)}
       FROM ${quoteIdentifier(historyTableName(table))} WINDOW ${w} AS (PARTITION BY id ORDER BY change_seq)`;
  });
  return `CREATE OR REPLACE VIEW ${quoteIdentifier(CHANGES_VIEW)} AS
WITH versions AS (
${versions.join('\n  UNION ALL\n')}
)
${feedSelect('versions')}`;
}

/** The largest `change_seq` of `resources`' versions, as text (NULL with none). */
export function newestChangeSql(resources: readonly FeedResource[]): string {
  return `SELECT CAST(max(change_seq) AS VARCHAR) AS m FROM (${versionsSql(resources, 'change_seq')})`;
}

/**
 * The `changes` view's rows for the versions `scope` selects (a predicate on `resource`, `change_seq` and
 * `observed_at`). The view orders every version of every record to find each one's previous version; this orders
 * only the versions of the records `scope` touches, so a poll for recent changes costs what it returns, not the
 * whole history.
 */
export function scopedChangesSql(resources: readonly FeedResource[], scope: string): string {
  const touched = `SELECT DISTINCT resource, id FROM (${versionsSql(resources, 'id, change_seq, observed_at')}) WHERE ${scope}`;
  const versions = `SELECT v.* FROM (${versionsSql(resources, FEED_VERSION_COLUMNS)}) AS v JOIN (${touched}) AS t USING (resource, id)`;
  return `${feedSelect(`(SELECT *, ${previous('w')} FROM (${versions}) WINDOW w AS (PARTITION BY resource, id ORDER BY change_seq))`)}
WHERE ${scope}`;
}
