import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { Gauge, Registry } from 'prom-client';
import { registerHealthGauges } from '../status/health-metrics.js';
import type { ResourceStatus } from '../status/index.js';

/**
 * SALESYNC_METRICS_TEXTFILE: the metrics of CLI runs for node_exporter's textfile collector
 * (`--collector.textfile.directory`; the file must end in `.prom`). The warehouse's health gauges (the worker's,
 * see health-metrics.ts) plus, per command, when it last ran, how long it took and how it ended. One file for
 * every command: each run keeps the other commands' last-run lines, so node_exporter never sees a series twice.
 */

/** How one CLI run ended. */
export interface CliRunFacts {
  command: string;
  /** Epoch ms. */
  startedAt: number;
  durationMs: number;
  /** The process's exit code (0 success, 1 failure, 2 configuration, 3 quarantine, 130 interrupted). */
  exitCode: number;
  /** The failure's stable code, when it failed. */
  errorCode: string | null;
}

const RUN_SERIES = [
  'salesync_cli_last_run_timestamp_seconds',
  'salesync_cli_last_run_duration_seconds',
  'salesync_cli_last_run_exit_code',
  'salesync_cli_last_run_success',
] as const;

/** The previous file's per-command lines: `series{command="x"} value`, by series then command. */
export function previousRuns(text: string): Map<string, Map<string, number>> {
  const runs = new Map<string, Map<string, number>>();
  for (const line of text.split('\n')) {
    const m = /^(salesync_cli_last_run_[a-z_]+)\{command="([a-z-]+)"\} (\S+)$/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    const series = runs.get(m[1]!) ?? new Map<string, number>();
    series.set(m[2]!, value);
    runs.set(m[1]!, series);
  }
  return runs;
}

/** The textfile's content (Prometheus text format 0.0.4). Pure but for the clock in `now`. */
export async function renderTextfile(
  statuses: readonly ResourceStatus[] | null,
  run: CliRunFacts,
  previous: string,
  now: () => number = Date.now,
): Promise<string> {
  const registry = new Registry();
  if (statuses) registerHealthGauges(registry, now).update(statuses);
  const help: Record<(typeof RUN_SERIES)[number], string> = {
    salesync_cli_last_run_timestamp_seconds: 'When the last CLI run of the command started',
    salesync_cli_last_run_duration_seconds: 'How long the last CLI run of the command took',
    salesync_cli_last_run_exit_code: 'Exit code of the last CLI run (0 ok, 1 failed, 2 configuration, 3 quarantine, 130 interrupted)',
    salesync_cli_last_run_success: '1 when the last CLI run of the command exited 0',
  };
  const gauges = Object.fromEntries(
    RUN_SERIES.map((name) => [name, new Gauge({ name, help: help[name], labelNames: ['command'], registers: [registry] })]),
  ) as Record<(typeof RUN_SERIES)[number], Gauge>;
  for (const [series, commands] of previousRuns(previous)) {
    const gauge = gauges[series as (typeof RUN_SERIES)[number]];
    if (!gauge) continue;
    for (const [command, value] of commands) if (command !== run.command) gauge.set({ command }, value);
  }
  const l = { command: run.command };
  gauges.salesync_cli_last_run_timestamp_seconds.set(l, run.startedAt / 1000);
  gauges.salesync_cli_last_run_duration_seconds.set(l, run.durationMs / 1000);
  gauges.salesync_cli_last_run_exit_code.set(l, run.exitCode);
  gauges.salesync_cli_last_run_success.set(l, run.exitCode === 0 ? 1 : 0);
  return registry.metrics();
}

/**
 * Write the textfile atomically: beside it, then renamed over it, so node_exporter never reads half a file
 * (a reader of the old file keeps reading the old one).
 */
export async function writeTextfile(path: string, statuses: readonly ResourceStatus[] | null, run: CliRunFacts): Promise<void> {
  const previous = await readFile(path, 'utf8').catch(() => '');
  const content = await renderTextfile(statuses, run, previous);
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, content, { mode: 0o644 });
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
}
