/** The SCD2 history's invariant, checked from the warehouse: every record's current version is its live row. */
import { expect } from 'vitest';
import { historyStoreName, historyTableName } from '../../src/warehouse/history-names.js';
import type { Warehouse } from '../../src/warehouse/index.js';

/**
 * Ids breaking the invariant in `table`: a live row without exactly one current version or without its version
 * columns, a current version without a live row or one that differs from it (properties, updated_at, deleted
 * state), a current version left in the store; and versions whose validity does not chain (each closed version
 * ends where the next, in commit order, starts).
 */
export async function historyInvariantBreaks(warehouse: Warehouse, table: string): Promise<Record<string, unknown>[]> {
  const history = historyTableName(table);
  const store = historyStoreName(table);
  return warehouse.query(
    `WITH current AS (SELECT * FROM ${history} WHERE is_current),
     counts AS (SELECT id, count(*) FILTER (WHERE is_current) AS n FROM ${history} GROUP BY id),
     chained AS (SELECT id, is_current, valid_to, lead(valid_from) OVER (PARTITION BY id ORDER BY change_seq) AS next_from
                 FROM ${history})
     SELECT coalesce(t.id, c.id) AS id, 'differs' AS problem FROM ${table} AS t FULL JOIN current AS c ON c.id = t.id
     WHERE t.id IS NULL OR c.id IS NULL OR CAST(c.properties AS VARCHAR) IS DISTINCT FROM CAST(t._properties AS VARCHAR)
        OR c.updated_at IS DISTINCT FROM t.updated_at OR c.deleted <> (t._deleted_at IS NOT NULL)
     UNION ALL SELECT id, 'current versions: ' || n FROM counts WHERE n <> 1
     UNION ALL SELECT id, 'a live row without its version' FROM ${table}
       WHERE _version_seq IS NULL OR _version_source IS NULL OR _version_observed_at IS NULL
     UNION ALL SELECT id, 'a current version in the store' FROM ${store} WHERE is_current
     UNION ALL SELECT id, 'unchained' FROM chained
       WHERE (is_current AND next_from IS NOT NULL) OR (NOT is_current AND valid_to IS DISTINCT FROM next_from)
     ORDER BY id`,
  );
}

export async function expectHistoryInvariant(warehouse: Warehouse, tables: readonly string[]): Promise<void> {
  for (const table of tables) expect(await historyInvariantBreaks(warehouse, table), table).toEqual([]);
}
