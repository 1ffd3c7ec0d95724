/**
 * Analyst views, rebuilt inside the transaction that applies property definitions:
 * - `<table>_view` per record resource (`deals_view`, `companies_view`, `contacts_view`, `meeting_logs_view`,
 *   `contact_activities_view`): live rows only, columns named by display name, select values as labels,
 *   and the names of linked records (owner, company, deal, contact);
 * - `deal_stage_history`: each deal's stages over time, from the versions of `deals_history` (SCD2);
 * - `<table>_history_view` and `changes`, built in `history-views.ts` (see there).
 * Display names become identifiers only through `quoteIdentifier`; option values and labels are never in the
 * SQL at all (the views read `property_options` by a numeric key we assign, see `optionLabels`).
 */
import { createHash } from 'node:crypto';
import type { DuckDBConnection } from '@duckdb/node-api';
import { RECORD_RESOURCE_NAMES, resourceDescriptor, type RecordResourceName } from '../core/resources.js';
import { sqlTypeFor } from './column-types.js';
import { historyTableName } from './history-names.js';
import { ensureHistoryTables } from './history.js';
import { changesViewSql, HISTORY_VIEW_COLUMNS, historyViewName, historyViewSql, type HistoryViewProperty } from './history-views.js';
import { optionLabels } from './option-labels.js';
import { identifierText, quoteIdentifier, quoteLiteral, SYSTEM_COLUMNS } from './identifiers.js';

export const DEAL_STAGE_HISTORY_VIEW = 'deal_stage_history';

export function resourceViewName(table: string): string {
  return `${table}_view`;
}

/** A property as the view shows it. */
export interface ViewProperty {
  apiName: string;
  columnName: string;
  displayName: string;
  /** Set for properties with options: the `property_options.property_key` to take labels from. */
  optionKey: number | null;
  /** The column holds JSON (a type we do not know): a label is looked up by, and shown in place of, its text. */
  json?: boolean;
}

/**
 * The options key of a property whose values the views show as labels: any type with options whose column holds
 * text (a `select`, or a type we do not know, such as a `picklist`: the spec enumerates none but `text`). Null for
 * the rest: a typed number, date or boolean keeps its type.
 */
function labelKey(propertyType: string, optionKey: number | undefined): number | null {
  const sqlType = sqlTypeFor(propertyType);
  return optionKey !== undefined && (sqlType === 'VARCHAR' || sqlType === 'JSON') ? optionKey : null;
}

/** A column taken from a linked record: `<target>.<column>` (or several, joined by a space) as `alias`. */
interface LinkedColumn {
  alias: string;
  /** api_names in the target resource (for `users`, its fixed column names). */
  from: readonly string[];
}

interface LinkJoin {
  /** The link property in this resource. */
  apiName: string;
  target: RecordResourceName | 'users';
  columns: readonly LinkedColumn[];
}

/** The spec's core link fields, and what an analyst wants to see instead of the id. */
const LINKS: Readonly<Record<RecordResourceName, readonly LinkJoin[]>> = {
  deals: [
    {
      apiName: 'owner_id',
      target: 'users',
      columns: [
        { alias: 'owner_name', from: ['name'] },
        { alias: 'owner_email', from: ['email'] },
      ],
    },
    { apiName: 'account_id', target: 'companies', columns: [{ alias: 'company_name', from: ['name'] }] },
  ],
  companies: [],
  contacts: [{ apiName: 'account_id', target: 'companies', columns: [{ alias: 'company_name', from: ['name'] }] }],
  'meeting-logs': [{ apiName: 'deal_id', target: 'deals', columns: [{ alias: 'deal_name', from: ['name'] }] }],
  // Japanese order: family name first.
  'contact-activities': [
    { apiName: 'contact_id', target: 'contacts', columns: [{ alias: 'contact_name', from: ['last_name', 'first_name'] }] },
  ],
};

const ENVELOPE = ['id', 'created_at', 'updated_at'] as const;

function foldCase(name: string): string {
  return name.toLowerCase();
}

/**
 * Column names of the view, one per property, in the order given. Pure and deterministic:
 * a display name is used as it is when no other column folds to the same name; every colliding one gets
 * ` (api_name)`, then ` (column_name)` (unique by construction), then ` #n`. An empty display name
 * falls back to the api_name.
 */
export function viewAliases(properties: readonly Omit<ViewProperty, 'optionKey'>[], reserved: readonly string[]): string[] {
  const bases = properties.map((p) => identifierText(p.displayName === '' ? p.apiName || p.columnName : p.displayName));
  const counts = new Map<string, number>();
  for (const name of [...reserved, ...bases]) counts.set(foldCase(name), (counts.get(foldCase(name)) ?? 0) + 1);
  const taken = new Set(reserved.map(foldCase));
  const aliases: (string | null)[] = bases.map((base) => {
    if (counts.get(foldCase(base)) !== 1) return null;
    taken.add(foldCase(base));
    return base;
  });
  return aliases.map((alias, i) => {
    if (alias !== null) return alias;
    const p = properties[i]!;
    const base = bases[i]!;
    const candidates = [`${base} (${identifierText(p.apiName)})`, `${base} (${identifierText(p.columnName)})`];
    let chosen = candidates.find((c) => !taken.has(foldCase(c)));
    for (let n = 2; chosen === undefined; n += 1) {
      const c = `${candidates[1]} #${n}`;
      if (!taken.has(foldCase(c))) chosen = c;
    }
    taken.add(foldCase(chosen));
    return chosen;
  });
}

/**
 * Where a view reads a text property: its column when it holds VARCHAR, else the raw properties (a link or name
 * field the service types as something we do not know, or does not list at all: the spec leaves both open).
 */
export type TextSource = { column: string } | { property: string };

/** A resolved link: where the id is read, the target table (null when it does not exist yet), and its names. */
export interface ResolvedLink {
  source: TextSource;
  targetTable: string | null;
  columns: { alias: string; targets: TextSource[] }[];
}

function textOf(alias: string, source: TextSource): string {
  return 'column' in source ? `${alias}.${quoteIdentifier(source.column)}` : `(${alias}._properties ->> ${quoteLiteral(source.property)})`;
}

/** SQL of a resource view. Pure: every name in it is quoted, every number is ours. */
export function resourceViewSql(table: string, properties: readonly ViewProperty[], links: readonly ResolvedLink[]): string {
  const linkAliases = links.flatMap((l) => l.columns.map((c) => c.alias));
  const aliases = viewAliases(properties, [...ENVELOPE, ...linkAliases]);
  const select: string[] = ENVELOPE.map((c) => `t.${quoteIdentifier(c)}`);
  const labels = optionLabels(properties.map((p) => p.optionKey));
  const joins: string[] = labels.join === '' ? [] : [labels.join];
  properties.forEach((p, i) => {
    const column = p.json && p.optionKey !== null ? `(t.${quoteIdentifier(p.columnName)} ->> '$')` : `t.${quoteIdentifier(p.columnName)}`;
    // A value outside the current options (the service keeps those) shows as itself.
    const shown = p.optionKey === null ? column : labels.shown(p.optionKey, column);
    select.push(`${shown} AS ${quoteIdentifier(aliases[i]!)}`);
  });
  links.forEach((link, i) => {
    const j = quoteIdentifier(`j${i}`);
    const joined = link.targetTable !== null;
    if (joined) joins.push(`LEFT JOIN ${quoteIdentifier(link.targetTable!)} AS ${j} ON ${j}.id = ${textOf('t', link.source)}`);
    for (const column of link.columns) {
      const parts = column.targets.map((c) => textOf(j, c));
      const expression =
        !joined || parts.length === 0
          ? 'CAST(NULL AS VARCHAR)'
          : parts.length === 1
            ? parts[0]!
            : `nullif(concat_ws(' ', ${parts.join(', ')}), '')`;
      select.push(`${expression} AS ${quoteIdentifier(column.alias)}`);
    }
  });
  return [
    `CREATE OR REPLACE VIEW ${quoteIdentifier(resourceViewName(table))} AS`,
    `SELECT ${select.join(',\n  ')}`,
    `FROM ${quoteIdentifier(table)} AS t`,
    ...joins,
    `WHERE t._deleted_at IS NULL`,
  ].join('\n');
}

/**
 * SQL of `deal_stage_history`: one row per stretch of a deal in one stage, from its versions in commit order; a
 * stretch runs from the valid_from of the version that entered the stage to that of the version that left it or
 * deleted the deal (valid_to NULL for the current one). A deal restored in the same stage starts a new stretch.
 */
export function dealStageHistorySql(historyTable: string, stageOptionKey: number | null): string {
  const labels = optionLabels([stageOptionKey]);
  const label = stageOptionKey === null ? 'CAST(NULL AS VARCHAR)' : labels.lookup(stageOptionKey, 'c.stage');
  return `CREATE OR REPLACE VIEW ${quoteIdentifier(DEAL_STAGE_HISTORY_VIEW)} AS
WITH versions AS (
  SELECT id, change_seq, valid_from, deleted, properties ->> 'stage' AS stage,
         lag(properties ->> 'stage') OVER w AS previous_stage, lag(deleted) OVER w AS previous_deleted
  FROM ${quoteIdentifier(historyTable)} WINDOW w AS (PARTITION BY id ORDER BY change_seq)
), starts AS (
  -- Versions that changed something else keep the stretch: only a new stage, a deletion or a restore starts one.
  SELECT id, change_seq, valid_from, deleted, stage FROM versions
  WHERE previous_deleted IS NULL OR stage IS DISTINCT FROM previous_stage OR deleted <> previous_deleted
), stretches AS (
  SELECT id, stage, deleted, valid_from, lead(valid_from) OVER (PARTITION BY id ORDER BY change_seq) AS valid_to FROM starts
)
SELECT c.id AS deal_id, c.stage, ${label} AS stage_label, c.valid_from, c.valid_to, c.valid_to IS NULL AS is_current
FROM stretches AS c${labels.join === '' ? '' : ` ${labels.join}`} WHERE NOT c.deleted`;
}

interface CurrentDefinition {
  apiName: string;
  columnName: string;
  displayName: string;
  propertyType: string;
}

/** What the views need to know of one record table. */
interface TableInfo {
  table: string;
  /** Present in the table, in table order. */
  columns: string[];
  /** Current definitions whose column is present. */
  definitions: CurrentDefinition[];
  /** api_name → column, for current definitions whose column exists and holds VARCHAR. */
  textColumns: Map<string, string>;
  /** api_name → `property_options.property_key`. */
  optionKeys: Map<string, number>;
}

/**
 * Everything the views are built from, in four reads for all resources (this runs on every listing of
 * definitions). Current definitions are those of the last listing: every definition listed at once shares its
 * `last_seen_at`, so those at the resource's latest one are current (one no longer listed keeps an older one).
 */
async function readTableInfos(connection: DuckDBConnection): Promise<Map<RecordResourceName, TableInfo>> {
  const columnRows = (
    await connection.runAndReadAll(
      `SELECT table_name, column_name FROM duckdb_columns()
       WHERE database_name = current_database() AND schema_name = 'main' ORDER BY table_name, column_index`,
    )
  ).getRowObjects();
  const definitionRows = (
    await connection.runAndReadAll(
      `SELECT resource, api_name, column_name, display_name, property_type FROM property_definitions AS p
       WHERE last_seen_at = (SELECT max(last_seen_at) FROM property_definitions AS q WHERE q.resource = p.resource)`,
    )
  ).getRowObjects();
  const keyRows = (
    await connection.runAndReadAll(`SELECT DISTINCT resource, api_name, property_key FROM property_options`)
  ).getRowObjects();

  const infos = new Map<RecordResourceName, TableInfo>();
  for (const resource of RECORD_RESOURCE_NAMES) {
    const table = resourceDescriptor(resource).table;
    const columns = columnRows.filter((r) => r.table_name === table).map((r) => String(r.column_name));
    if (columns.length === 0) continue;
    const present = new Set(columns);
    const definitions = definitionRows
      .filter((r) => r.resource === resource && present.has(String(r.column_name)))
      .map((r) => ({
        apiName: String(r.api_name),
        columnName: String(r.column_name),
        displayName: r.display_name === null ? '' : String(r.display_name),
        propertyType: String(r.property_type),
      }));
    const textColumns = new Map(definitions.filter((d) => sqlTypeFor(d.propertyType) === 'VARCHAR').map((d) => [d.apiName, d.columnName]));
    const optionKeys = new Map(keyRows.filter((r) => r.resource === resource).map((r) => [String(r.api_name), Number(r.property_key)]));
    infos.set(resource, { table, columns, definitions, textColumns, optionKeys });
  }
  return infos;
}

function resourceViewOf(resource: RecordResourceName, info: TableInfo, infos: ReadonlyMap<RecordResourceName, TableInfo>): string {
  const system = new Set<string>(SYSTEM_COLUMNS);
  const byColumn = new Map(info.definitions.map((d) => [d.columnName, d]));
  // Table order: the service's listing order, then properties in the order they appeared.
  const properties: ViewProperty[] = info.columns
    .filter((c) => !system.has(c))
    .flatMap((c) => {
      const d = byColumn.get(c);
      if (!d) return []; // kept after a type change, no longer listed, or not a property: still in the table
      const optionKey = labelKey(d.propertyType, info.optionKeys.get(d.apiName));
      const json = sqlTypeFor(d.propertyType) === 'JSON';
      return [{ apiName: d.apiName, columnName: d.columnName, displayName: d.displayName, optionKey, ...(json ? { json } : {}) }];
    });
  const textSource = (of: TableInfo, apiName: string): TextSource => {
    const column = of.textColumns.get(apiName);
    return column === undefined ? { property: apiName } : { column };
  };
  const links: ResolvedLink[] = LINKS[resource].map((link) => {
    const target = link.target === 'users' ? null : infos.get(link.target);
    return {
      source: textSource(info, link.apiName),
      targetTable: link.target === 'users' ? 'users' : target ? target.table : null,
      columns: link.columns.map((c) => ({
        alias: c.alias,
        targets:
          link.target === 'users' ? c.from.map((name) => ({ column: name })) : target ? c.from.map((name) => textSource(target, name)) : [],
      })),
    };
  });
  return resourceViewSql(info.table, properties, links);
}

/** The history view of one table: its current properties in table order, typed and labelled like the live view. */
function historyViewOf(info: TableInfo): string {
  const byColumn = new Map(info.definitions.map((d) => [d.columnName, d]));
  const system = new Set<string>(SYSTEM_COLUMNS);
  const definitions = info.columns.flatMap((c) => {
    const d = system.has(c) ? undefined : byColumn.get(c);
    return d ? [d] : [];
  });
  const aliases = viewAliases(definitions, [...ENVELOPE, ...HISTORY_VIEW_COLUMNS]);
  const properties: HistoryViewProperty[] = definitions.map((d, i) => {
    const optionKey = labelKey(d.propertyType, info.optionKeys.get(d.apiName));
    const sqlType = sqlTypeFor(d.propertyType);
    // Labelled, a value of a type we do not know is read as text, as the live view shows it.
    const json = optionKey !== null && sqlType === 'JSON';
    return {
      apiName: d.apiName,
      alias: aliases[i]!,
      sqlType: json ? 'VARCHAR' : sqlType,
      optionKey,
      ...(json ? { json: true as const } : {}),
    };
  });
  return historyViewSql(info.table, properties);
}

/** Marks a view with the hash of the SQL that made it, so an unchanged view is not rewritten. */
function viewMark(sql: string): string {
  return `salesync:${createHash('sha256').update(sql).digest('hex').slice(0, 32)}`;
}

/** Rebuild the views whose SQL changed (every resource view and `deal_stage_history`); runs in the caller's transaction. */
export async function rebuildViews(connection: DuckDBConnection): Promise<void> {
  const infos = await readTableInfos(connection);
  const wanted = new Map<string, string>();
  for (const [resource, info] of infos) wanted.set(resourceViewName(info.table), resourceViewOf(resource, info, infos));
  // Every record table has its history (an earlier release's is migrated here), its history view, and a part in the feed.
  await ensureHistoryTables(
    connection,
    [...infos.values()].map((info) => info.table),
  );
  for (const info of infos.values()) wanted.set(historyViewName(info.table), historyViewOf(info));
  if (infos.size > 0) wanted.set('changes', changesViewSql([...infos].map(([resource, info]) => ({ resource, table: info.table }))));
  const deals = infos.get('deals');
  if (deals) {
    wanted.set(DEAL_STAGE_HISTORY_VIEW, dealStageHistorySql(historyTableName(deals.table), deals.optionKeys.get('stage') ?? null));
  }

  const marks = new Map(
    (
      await connection.runAndReadAll(
        `SELECT view_name, comment FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main'`,
      )
    )
      .getRowObjects()
      .map((r) => [String(r.view_name), r.comment === null ? null : String(r.comment)]),
  );
  for (const [view, sql] of wanted) {
    const mark = viewMark(sql);
    if (marks.get(view) === mark) continue; // binding a view is the costly part: skip the unchanged ones
    await connection.run(sql);
    // The mark is hex we made: safe as a literal.
    await connection.run(`COMMENT ON VIEW ${quoteIdentifier(view)} IS '${mark}'`);
  }
}
