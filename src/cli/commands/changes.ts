import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { ConfigError } from '../../core/errors.js';
import { RECORD_RESOURCE_NAMES, type RecordResourceName } from '../../core/resources.js';
import { canonicalInstant } from '../../core/time.js';
import { createWarehouse, type ChangeQuery, type ChangeRow, type ChangeSince } from '../../sync/index.js';
import { assertReadableIfPresent, warehouseMissing } from '../../warehouse/index.js';
import { outputPathError } from '../output-path.js';
import type { CliRuntime } from '../runtime.js';
import { shown } from '../option-parsers.js';

export const CHANGE_FORMATS = ['ndjson', 'parquet'] as const;

export interface ChangesCommandOptions {
  since: string;
  format: string;
  output?: string;
}

/** `--since`: a cursor (a whole number a previous call printed; 0 for everything) or an ISO 8601 time with a zone. */
export function parseSince(value: string): ChangeSince {
  const text = value.trim();
  if (/^\d{1,19}$/.test(text) && BigInt(text) <= 9223372036854775807n) return { cursor: BigInt(text) };
  // A time needs its zone: read without one, a poll's window would move with whoever's clock wrote it.
  const time = /^\d{4}-\d{2}-\d{2}T.*(?:[Zz]|[+-]\d{2}(?::?\d{2})?)$/.test(text) ? canonicalInstant(text) : null;
  if (time !== null) return { time };
  throw new ConfigError(
    'invalid_since',
    `--since takes a cursor printed by an earlier "salesync changes" (a whole number; 0 for everything) or an ISO 8601 time with a zone, such as 2026-01-05T00:00:00Z (got ${shown(value)})`,
    { option: '--since' },
  );
}

function parseChangeResources(names: readonly string[]): RecordResourceName[] {
  const unknown = names.filter((n) => !(RECORD_RESOURCE_NAMES as readonly string[]).includes(n));
  if (unknown.length > 0) {
    throw new ConfigError(
      'unknown_resource',
      `unknown resource ${unknown.join(', ')} for changes: choose from ${RECORD_RESOURCE_NAMES.join(', ')} (users have no history)`,
    );
  }
  return [...new Set(names as RecordResourceName[])];
}

/** One change as an NDJSON line: what changed, with old and new values; the whole record for an insert or a delete. */
export function changeLine(change: ChangeRow): Record<string, unknown> {
  const oldProperties = (change.old_properties ?? {}) as Record<string, unknown>;
  const newProperties = (change.new_properties ?? {}) as Record<string, unknown>;
  const changes = Object.fromEntries(
    change.changed_properties.map((name) => [name, { old: oldProperties[name] ?? null, new: newProperties[name] ?? null }]),
  );
  return {
    change_seq: change.change_seq,
    resource: change.resource,
    id: change.id,
    kind: change.kind,
    changed_at: change.changed_at,
    committed_at: change.committed_at,
    source: change.source,
    run_id: change.run_id,
    changes,
    ...(change.kind === 'insert' || change.kind === 'delete' ? { properties: newProperties } : {}),
  };
}

/**
 * Print the changes committed after `--since` in commit order, from the published warehouse (READ_ONLY), one JSON
 * object a line, then `{"cursor":"<n>"}` as the last line: pass it as `--since` next time and nothing is skipped or
 * repeated. With `--output`, the changes go to that file and only the cursor line to stdout.
 */
export async function changesCommand(runtime: CliRuntime, names: string[], options: ChangesCommandOptions): Promise<void> {
  if (!(CHANGE_FORMATS as readonly string[]).includes(options.format)) {
    throw new ConfigError('invalid_option', `--format must be one of ${CHANGE_FORMATS.join(', ')} (got ${shown(options.format)})`, {
      option: '--format',
    });
  }
  if (options.format === 'parquet' && options.output === undefined) {
    throw new ConfigError('invalid_option', '--format parquet writes a file: give it with --output <file>', { option: '--output' });
  }
  const query: ChangeQuery = { resources: parseChangeResources(names), since: parseSince(options.since) };
  if (assertReadableIfPresent(runtime.config.warehousePath) === 'missing') {
    throw warehouseMissing(runtime.config.warehousePath);
  }
  const warehouse = createWarehouse(runtime.config, runtime.logger);
  // An upgraded warehouse gets its feed when a sync first writes it; its versions then start after cursor 0.
  const warnIfNoFeed = (available: boolean) => {
    if (!available) runtime.logger.warn('the warehouse has no change feed yet: the next sync writes it, and --since 0 then reads it all');
  };
  try {
    if (options.format === 'parquet') {
      const file = resolve(options.output!);
      const { rows, cursor, available } = await warehouse.writeChangesParquet(query, file);
      warnIfNoFeed(available);
      runtime.out(JSON.stringify({ cursor, rows, file }));
      return;
    }
    const { changes, cursor, available } = await warehouse.readChanges(query);
    warnIfNoFeed(available);
    if (options.output === undefined) {
      for (const change of changes) runtime.out(JSON.stringify(changeLine(change)));
      runtime.out(JSON.stringify({ cursor }));
      return;
    }
    const file = resolve(options.output);
    const stream = createWriteStream(file, { mode: 0o600 });
    // Opening is where a missing directory or a path that is a directory shows: one line, before a change is written.
    await once(stream, 'open').catch((error: unknown) => {
      throw outputPathError(error, '--output', options.output!);
    });
    for (const change of changes) {
      if (!stream.write(`${JSON.stringify(changeLine(change))}\n`)) await once(stream, 'drain');
    }
    stream.end();
    await once(stream, 'finish');
    runtime.out(JSON.stringify({ cursor, rows: changes.length, file }));
  } finally {
    await warehouse.close();
  }
}
