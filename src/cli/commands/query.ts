import { existsSync } from 'node:fs';
import { ConfigError } from '../../core/errors.js';
import { createWarehouse } from '../../sync/index.js';
import type { CliRuntime } from '../runtime.js';
import { formatTable } from '../table.js';

/** Run one SQL statement against the warehouse, opened read-only, and print the rows. */
export async function queryCommand(runtime: CliRuntime, sql: string, options: { json?: boolean }): Promise<void> {
  if (!existsSync(runtime.config.warehousePath)) {
    throw new ConfigError('warehouse_missing', `no warehouse at ${runtime.config.warehousePath}: run \`salesync sync\` first (or set WAREHOUSE_PATH)`);
  }
  const rows = await createWarehouse(runtime.config, runtime.logger).query(sql);
  if (options.json) {
    runtime.out(JSON.stringify(rows, null, 2));
    return;
  }
  const headers = Object.keys(rows[0] ?? {});
  runtime.out(
    formatTable(
      headers,
      rows.map((row) => headers.map((h) => cellText(row[h]))),
    ),
  );
  runtime.out(`(${rows.length} ${rows.length === 1 ? 'row' : 'rows'})`);
}

function cellText(value: unknown): string | number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}
