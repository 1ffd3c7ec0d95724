/**
 * Identifiers: quoting, and the column name each property gets. Property metadata is data: it reaches SQL only
 * through `quoteIdentifier` (names) or parameter binding (values).
 */
import type { PropertyDefinition } from '../core/types.js';
import type { ColumnPlan } from './types.js';
import { sqlTypeFor, sqlTypeTag } from './column-types.js';
import { VERSION_COLUMNS } from './history-names.js';

/** Double every `"` and wrap: any string becomes one identifier, never SQL (one holding NUL: see identifierText). */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** DuckDB's parser ends a quoted identifier at NUL: the only character a name from the service cannot keep. */
export function identifierText(name: string): string {
  return name.replaceAll('\u0000', '\uFFFD');
}

/** Double every `'` and wrap: any string becomes one SQL string literal (where a statement takes no parameters). */
export function quoteLiteral(text: string): string {
  const quoted = `'${text.replaceAll("'", "''")}'`;
  // DuckDB's parser ends a literal at a NUL: text from the service (a cursor) may hold one, spelled as chr(0).
  return text.includes('\0') ? `(${quoted.replaceAll('\0', "' || chr(0) || '")})` : quoted;
}

/** Columns every record table has; no property may take these names (compared case-insensitively). */
export const SYSTEM_COLUMNS = [
  'id',
  'created_at',
  'updated_at',
  '_properties',
  '_synced_at',
  '_deleted_at',
  '_content_hash',
  ...VERSION_COLUMNS.map((c) => c.name),
] as const;

/**
 * Names no property column may take either: DuckDB's `rowid` pseudo-column, which a column so named hides
 * (the upsert replaces stored rows by rowid).
 */
const RESERVED_COLUMNS = ['rowid'] as const;

/** A property's persisted column (a row of property_definitions). */
export interface ColumnAssignment {
  apiName: string;
  columnName: string;
  propertyType: string;
}

export interface ColumnNaming {
  /** One entry per definition, in the order given. */
  plan: ColumnPlan[];
  /** Entries of `plan` whose column does not exist yet (a new property, or a new type for an existing one). */
  added: ColumnPlan[];
}

/** DuckDB folds identifier case: names are compared in this form. */
function foldCase(name: string): string {
  return name.toLowerCase();
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * One definition per api_name, whatever order the service lists duplicates in (the spec does not rule them out):
 * of a name listed more than once, the entry whose type keeps its stored column, else the least by type, display
 * name and options. Taking the last listed, as a Map would, flipped the column's type with the listing order and
 * added a column on every sync. Pure; `duplicated` names the api_names listed more than once.
 */
export function distinctDefinitions(
  definitions: readonly PropertyDefinition[],
  existing: readonly ColumnAssignment[],
): { definitions: PropertyDefinition[]; duplicated: string[] } {
  const groups = new Map<string, PropertyDefinition[]>();
  for (const definition of definitions) {
    const group = groups.get(definition.api_name);
    if (group) group.push(definition);
    else groups.set(definition.api_name, [definition]);
  }
  const storedType = new Map(existing.map((a) => [a.apiName, sqlTypeFor(a.propertyType)]));
  const key = (d: PropertyDefinition) => `${d.property_type}\u0000${d.display_name}\u0000${JSON.stringify(d.options ?? [])}`;
  const duplicated: string[] = [];
  const chosen: PropertyDefinition[] = [];
  for (const [apiName, group] of groups) {
    if (group.length === 1) {
      chosen.push(group[0]!);
      continue;
    }
    duplicated.push(apiName);
    const ordered = [...group].sort((a, b) => compareCodeUnits(key(a), key(b)));
    const stored = storedType.get(apiName);
    chosen.push(ordered.find((d) => stored !== undefined && sqlTypeFor(d.property_type) === stored) ?? ordered[0]!);
  }
  return { definitions: chosen, duplicated };
}

/**
 * Decide each definition's column. Pure and deterministic:
 * - an existing assignment whose SQL type is unchanged keeps its column forever;
 * - a new property takes its api_name (a NUL in it becomes U+FFFD); a type change takes `<api_name>__<type>`
 *   (the old column is kept);
 * - a name already taken (case-insensitively) by a system or reserved column, an existing column or an earlier
 *   assignment gets `__2`, `__3`, ... New names are handed out in api_name order, so the result does not
 *   depend on the order the service lists definitions in.
 * `existingColumns` are the table's current columns (including columns kept after a type change).
 */
export function assignColumnNames(
  existing: readonly ColumnAssignment[],
  definitions: readonly PropertyDefinition[],
  existingColumns: readonly string[] = [],
): ColumnNaming {
  const taken = new Set<string>(
    [...SYSTEM_COLUMNS, ...RESERVED_COLUMNS, ...existingColumns, ...existing.map((a) => a.columnName)].map(foldCase),
  );
  const byApiName = new Map(existing.map((a) => [a.apiName, a]));
  // Callers pass distinct definitions (distinctDefinitions); of a duplicate the last listed would win here.
  const unique = new Map(definitions.map((d) => [d.api_name, d]));

  const chosen = new Map<string, { columnName: string; isNew: boolean }>();
  const needNames: PropertyDefinition[] = [];
  for (const definition of unique.values()) {
    const previous = byApiName.get(definition.api_name);
    if (previous && sqlTypeFor(previous.propertyType) === sqlTypeFor(definition.property_type)) {
      chosen.set(definition.api_name, { columnName: previous.columnName, isNew: false });
    } else {
      needNames.push(definition);
    }
  }

  for (const definition of [...needNames].sort((a, b) => compareCodeUnits(a.api_name, b.api_name))) {
    const base = definition.api_name === '' ? 'property' : identifierText(definition.api_name);
    const retyped = byApiName.has(definition.api_name);
    const stem = retyped ? `${base}__${sqlTypeTag(sqlTypeFor(definition.property_type))}` : base;
    let candidate = stem;
    for (let n = 2; taken.has(foldCase(candidate)); n += 1) candidate = `${stem}__${n}`;
    taken.add(foldCase(candidate));
    chosen.set(definition.api_name, { columnName: candidate, isNew: true });
  }

  const plan: ColumnPlan[] = [];
  const added: ColumnPlan[] = [];
  for (const definition of unique.values()) {
    const choice = chosen.get(definition.api_name);
    if (!choice) continue;
    const entry: ColumnPlan = {
      apiName: definition.api_name,
      columnName: choice.columnName,
      propertyType: definition.property_type,
      sqlType: sqlTypeFor(definition.property_type),
    };
    plan.push(entry);
    if (choice.isNew) added.push(entry);
  }
  return { plan, added };
}
