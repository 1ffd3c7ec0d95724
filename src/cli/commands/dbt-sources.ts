import { writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createWarehouse } from '../../sync/index.js';
import { assertReadableIfPresent, warehouseMissing, makeDirectories } from '../../warehouse/index.js';
import { dbtSourcesYaml } from '../../warehouse/dbt-sources-yaml.js';
import { outputPathError } from '../output-path.js';
import type { CliRuntime } from '../runtime.js';

export interface DbtSourcesCommandOptions {
  out?: string;
  sourceName: string;
  database?: string;
}

/** A dbt `sources.yml` for the published warehouse, to stdout or to `--out`. */
export async function dbtSourcesCommand(runtime: CliRuntime, options: DbtSourcesCommandOptions): Promise<void> {
  if (assertReadableIfPresent(runtime.config.warehousePath) === 'missing') {
    throw warehouseMissing(runtime.config.warehousePath);
  }
  const catalog = await createWarehouse(runtime.config, runtime.logger).catalog();
  const yaml = dbtSourcesYaml(catalog, { sourceName: options.sourceName, ...(options.database ? { database: options.database } : {}) });
  if (options.out === undefined) {
    runtime.out(yaml.trimEnd());
    return;
  }
  const out = options.out;
  try {
    await makeDirectories(dirname(out), 0o755);
    await writeFile(out, yaml);
  } catch (error) {
    throw outputPathError(error, '--out', out);
  }
  runtime.out(`wrote ${catalog.length} tables and views to ${options.out}`);
}
