import { constants } from 'node:fs';
import { access as fsAccess } from 'node:fs/promises';
import { ConfigError } from '../../core/errors.js';
import { createWarehouse } from '../../sync/index.js';
import { assertReadableIfPresent, warehouseMissing } from '../../warehouse/index.js';
import { createExportDirectory, exportAccessFor, shareExport } from '../../warehouse/export.js';
import { outputPathError } from '../output-path.js';
import type { CliRuntime } from '../runtime.js';
import { formatCount } from '../format.js';
import { formatTable } from '../table.js';

export const EXPORT_FORMATS = ['parquet'] as const;

/** One Parquet file per table and view, for pandas, Polars and Spark, from the published warehouse (READ_ONLY). */
export async function exportCommand(runtime: CliRuntime, options: { format: string; out: string; json?: boolean }): Promise<void> {
  if (!(EXPORT_FORMATS as readonly string[]).includes(options.format)) {
    throw new ConfigError('invalid_export_format', `unknown export format "${options.format}": choose from ${EXPORT_FORMATS.join(', ')}`);
  }
  // The published file: a missing one says run a sync; one this user may not read says so (warehouse_unreadable).
  if (assertReadableIfPresent(runtime.config.warehousePath) === 'missing') {
    throw warehouseMissing(runtime.config.warehousePath);
  }
  // Owner-only unless the operator opened the published warehouse up; then as open as it, for the same readers.
  const access = exportAccessFor({ mode: runtime.config.publishMode, group: runtime.config.publishGroup });
  // Made, or found, and writable: a refusal is the operator's to fix, before a file is written.
  await createExportDirectory(options.out, access)
    .then(() => fsAccess(options.out, constants.W_OK))
    .catch((error: unknown) => {
      throw outputPathError(error, '--out', options.out);
    });
  const files = await createWarehouse(runtime.config, runtime.logger).exportParquet(options.out);
  await shareExport(files, access);
  if (options.json) {
    runtime.out(JSON.stringify(files, null, 2));
    return;
  }
  runtime.out(
    formatTable(
      ['relation', 'kind', 'rows', 'file'],
      files.map((f) => [f.relation, f.kind, f.rows, f.file]),
    ),
  );
  runtime.out(`(${formatCount(files.length, 'file')} in ${options.out})`);
}
