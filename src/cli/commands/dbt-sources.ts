import { writeFile } from 'node:fs/promises';
import { ConfigError } from '../../core/errors.js';
import { createWarehouse } from '../../sync/index.js';
import { assertReadableIfPresent, dbtSourcesYaml } from '../../warehouse/index.js';
import type { CliRuntime } from '../runtime.js';

export interface DbtSourcesCommandOptions {
  out?: string;
  sourceName: string;
  database?: string;
}

/** A dbt `sources.yml` for the published warehouse, to stdout or to `--out`. */
export async function dbtSourcesCommand(runtime: CliRuntime, options: DbtSourcesCommandOptions): Promise<void> {
  if (assertReadableIfPresent(runtime.config.warehousePath) === 'missing') {
    throw new ConfigError(
      'warehouse_missing',
      `no warehouse at ${runtime.config.warehousePath}: run \`salesync sync\` first (or set WAREHOUSE_PATH)`,
    );
  }
  const catalog = await createWarehouse(runtime.config, runtime.logger).catalog();
  const yaml = dbtSourcesYaml(catalog, { sourceName: options.sourceName, ...(options.database ? { database: options.database } : {}) });
  if (options.out === undefined) {
    runtime.out(yaml.trimEnd());
    return;
  }
  await writeFile(options.out, yaml);
  runtime.out(`wrote ${catalog.length} tables and views to ${options.out}`);
}
