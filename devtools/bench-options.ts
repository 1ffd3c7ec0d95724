/**
 * The flags of `npm run bench`, checked before any section starts: a misspelled section used to run nothing and
 * print an empty table, an unknown flag ended in a stack trace, and `--scale abc` sized every section NaN.
 */
import { parseArgs } from 'node:util';

/** The bench's sections, in the order a run takes them. */
export const BENCH_SECTIONS = ['efficiency', 'limiter', 'load', 'memory', 'e2e', 'publish', 'wide'] as const;
export type BenchSection = (typeof BENCH_SECTIONS)[number];

export interface BenchOptions {
  /** Multiplies every data size. */
  scale: number;
  /** The sections to run; null for all of them. */
  only: ReadonlySet<BenchSection> | null;
  /** A directory for the memory section's RSS series (one TSV per sync, sampled every 5 ms); null for none. */
  rssSeries: string | null;
  help: boolean;
}

export const BENCH_USAGE =
  `usage: npm run bench [-- --scale <number>] [--only <section,...>] [--rss-series <dir>]\n` +
  `  --scale  multiplies every data size (default 1; e.g. 0.1 for a quick look, 2 for the 2M-record memory row)\n` +
  `  --only   runs some sections: ${BENCH_SECTIONS.join(', ')}\n` +
  `  --rss-series  writes each memory-section sync's RSS, sampled every 5 ms, to <dir>/sync-<records>.tsv\n`;

/** A flag the bench cannot run with; its message is one line saying what to pass instead. */
export class BenchUsageError extends Error {
  readonly code = 'invalid_bench_option';
}

const isSection = (name: string): name is BenchSection => (BENCH_SECTIONS as readonly string[]).includes(name);

export function parseBenchOptions(args: readonly string[]): BenchOptions {
  let values: { scale?: string | undefined; only?: string | undefined; 'rss-series'?: string | undefined; help?: boolean | undefined };
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        scale: { type: 'string' },
        only: { type: 'string' },
        'rss-series': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    // parseArgs names the flag or argument in its first sentence, without the flags the bench knows.
    const said = (error instanceof Error ? error.message : String(error)).split('. ')[0]!;
    throw new BenchUsageError(`${said}: the bench takes --scale <number>, --only <section,...> and --rss-series <dir>`);
  }
  const scale = values.scale === undefined ? 1 : Number(values.scale);
  if (!(Number.isFinite(scale) && scale > 0)) {
    throw new BenchUsageError(`--scale must be a positive number (e.g. 0.1 or 2), got "${values.scale}"`);
  }
  let only: Set<BenchSection> | null = null;
  if (values.only !== undefined) {
    const names = values.only
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== '');
    const unknown = names.filter((name) => !isSection(name));
    if (names.length === 0 || unknown.length > 0) {
      throw new BenchUsageError(
        `--only ${unknown.length > 0 ? `names no section "${unknown.join('", "')}"` : 'needs a section'}: ` +
          `pass some of ${BENCH_SECTIONS.join(', ')}, separated by commas`,
      );
    }
    only = new Set(names.filter(isSection));
  }
  const rssSeries = values['rss-series'] ?? null;
  if (rssSeries === '') throw new BenchUsageError('--rss-series needs a directory to write the RSS series to');
  return { scale, only, rssSeries, help: values.help ?? false };
}
