/**
 * A dbt `sources.yml` for dbt-duckdb, from the warehouse's catalog (`readCatalog`): display names as
 * descriptions, `unique`/`not_null` tests on ids, and freshness on `_synced_at`. Its own module, so that only
 * `salesync dbt-sources` loads the YAML library.
 */
import { stringify } from 'yaml';
import { RECORD_RESOURCE_NAMES, resourceDescriptor } from '../core/resources.js';
import type { CatalogRelation } from './dbt-sources.js';

export interface DbtSourcesOptions {
  /** The dbt source name (`{{ source('salesync', 'deals') }}`). @defaultValue 'salesync' */
  sourceName?: string;
  /**
   * The database dbt-duckdb knows the warehouse by, when the dbt project attaches it (`attach: [{ path, alias }]`).
   * @defaultValue none: the warehouse is the profile's own `path`
   */
  database?: string;
  /** Hours without a sync before dbt warns, and before it errors. @defaultValue 24 and 48 */
  warnAfterHours?: number;
  errorAfterHours?: number;
}

/** Tables whose rows are one record each by `id`; their history and views repeat ids or drop deleted rows. */
const RECORD_TABLES = new Set<string>([...RECORD_RESOURCE_NAMES.map((r) => resourceDescriptor(r).table), 'users']);

const RELATION_DESCRIPTIONS: Readonly<Record<string, string>> = {
  users: 'Users of the organization, replaced by a complete listing each run; vanished users have _deleted_at.',
  meeting_log_summaries: 'Summaries of each meeting log, as its single-record view last returned them.',
  meeting_log_summary_reads: "When each meeting log's summaries were last read, and when they are next due.",
  property_definitions: 'Property definitions as last listed by the service, with the column each is stored in.',
  property_options: "Labels of select properties' options.",
  property_type_changes: 'Properties whose type the service changed, and what became of their stored values.',
  sync_state: "Watermarks and checkpoints of each resource's walks.",
  sync_runs: 'Every sync, backfill, reconcile and summaries run, with its figures and outcome.',
  reconcile_seen: 'Ids listed by a reconcile sweep under way.',
  rejected_records: 'Records in quarantine: listed by the service but not valid, with the reason and the run.',
  deal_stage_history: "Each deal's stretches in one stage, from the versions of deals_history; valid_to null for the current one.",
  changes: 'The change feed: one row per version of every record, in commit order (change_seq), with what changed.',
};

function relationDescription(name: string): string | null {
  if (RELATION_DESCRIPTIONS[name]) return RELATION_DESCRIPTIONS[name]!;
  for (const resource of RECORD_RESOURCE_NAMES) {
    const table = resourceDescriptor(resource).table;
    if (name === table) return `Every ${resource} record, one row per id, custom properties in typed columns.`;
    if (name === `${table}_history`) return `Every version of each ${resource} record as the mirror held it (SCD type 2), in commit order.`;
    if (name === `${table}_history_view`)
      return `Every version of each ${resource} record with display names as column names and labels for select values.`;
    if (name === `${table}_view`) return `Live ${resource} records with display names as column names and labels for select values.`;
  }
  return null;
}

/** The catalog as dbt's `sources.yml` (version 2). Pure. */
export function dbtSourcesYaml(catalog: readonly CatalogRelation[], options: DbtSourcesOptions = {}): string {
  const freshness = {
    warn_after: { count: options.warnAfterHours ?? 24, period: 'hour' },
    error_after: { count: options.errorAfterHours ?? 48, period: 'hour' },
  };
  const tables = catalog.map((relation) => {
    const synced = relation.columns.some((c) => c.name === '_synced_at');
    const oneRowPerId = relation.kind === 'table' && RECORD_TABLES.has(relation.name);
    const description = relationDescription(relation.name);
    return {
      name: relation.name,
      ...(description ? { description } : {}),
      ...(synced ? { loaded_at_field: '_synced_at', freshness } : {}),
      columns: relation.columns.map((column) => ({
        name: column.name,
        data_type: column.type,
        ...(column.description ? { description: column.description } : {}),
        ...(column.name === 'id' && oneRowPerId
          ? { data_tests: ['unique', 'not_null'] }
          : column.name === 'id'
            ? { data_tests: ['not_null'] }
            : {}),
      })),
    };
  });
  const document = {
    version: 2,
    sources: [
      {
        name: options.sourceName ?? 'salesync',
        description: 'The Sales Records Service, mirrored by salesync.',
        ...(options.database ? { database: options.database } : {}),
        schema: 'main',
        tables,
      },
    ],
  };
  return `# Written by \`salesync dbt-sources\`: rerun it after the service adds properties.\n${stringify(document, { lineWidth: 0 })}`;
}
