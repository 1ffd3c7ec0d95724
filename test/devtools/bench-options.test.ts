import { describe, expect, it } from 'vitest';
import { BENCH_SECTIONS, BenchUsageError, parseBenchOptions } from '../../devtools/bench-options.js';

const refusal = (args: string[]): BenchUsageError => {
  try {
    parseBenchOptions(args);
  } catch (error) {
    if (error instanceof BenchUsageError) return error;
    throw error;
  }
  throw new Error(`parseBenchOptions accepted ${args.join(' ')}`);
};

describe('parseBenchOptions', () => {
  it('runs every section at scale 1 when given nothing', () => {
    expect(parseBenchOptions([])).toEqual({ scale: 1, only: null, rssSeries: null, help: false });
  });

  it('takes a scale and a comma-separated list of sections', () => {
    const options = parseBenchOptions(['--scale', '0.1', '--only', 'load, memory,e2e']);
    expect(options.scale).toBe(0.1);
    expect([...options.only!]).toEqual(['load', 'memory', 'e2e']);
    expect(parseBenchOptions(['--only', BENCH_SECTIONS.join(',')]).only!.size).toBe(BENCH_SECTIONS.length);
  });

  it('refuses a misspelled section, naming it and the sections there are, instead of running nothing', () => {
    const error = refusal(['--only', 'load,memroy']);
    expect(error.code).toBe('invalid_bench_option');
    expect(error.message).toBe(`--only names no section "memroy": pass some of ${BENCH_SECTIONS.join(', ')}, separated by commas`);
    expect(refusal(['--only', ',']).message).toMatch(/^--only needs a section: pass some of efficiency, /);
  });

  it('refuses a scale that is not a positive number instead of sizing every section NaN', () => {
    for (const scale of ['abc', '0', '-1', 'Infinity', '']) {
      expect(refusal([`--scale=${scale}`]).message).toBe(`--scale must be a positive number (e.g. 0.1 or 2), got "${scale}"`);
    }
  });

  it('refuses an unknown flag or a stray argument in one line naming it and the flags there are', () => {
    for (const [args, named] of [
      [['--scael', '2'], "Unknown option '--scael'"],
      [['load'], "Unexpected argument 'load'"],
      [['--scale'], "Option '--scale <value>' argument missing"],
    ] as const) {
      const { message } = refusal([...args]);
      expect(message).toBe(`${named}: the bench takes --scale <number>, --only <section,...> and --rss-series <dir>`);
      expect(message).not.toContain('\n');
    }
  });

  it("takes a directory for the memory syncs' RSS series, and refuses an empty one", () => {
    expect(parseBenchOptions(['--only', 'memory', '--rss-series', '/tmp/rss']).rssSeries).toBe('/tmp/rss');
    expect(refusal(['--rss-series=']).message).toBe('--rss-series needs a directory to write the RSS series to');
  });

  it('says it was asked for help', () => {
    expect(parseBenchOptions(['--help']).help).toBe(true);
    expect(parseBenchOptions(['-h']).help).toBe(true);
  });
});
