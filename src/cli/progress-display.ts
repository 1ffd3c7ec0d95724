import { createLogUpdate } from 'log-update';
import { RESOURCE_NAMES } from '../core/resources.js';
import {
  estimateRemainingMs,
  isFinishedPhase,
  MAX_ETA_MS,
  type LiveProgress,
  type ProgressSink,
  type ResourceProgress,
} from '../sync/progress.js';
import { formatDuration, formatNumber, noun } from './format.js';

/** How often the block redraws on its own, so elapsed times and rates move while no page arrives. */
export const TICK_MS = 1000;

/** Reports closer together than this are drawn as one frame. */
const REPORT_FRAME_MS = 200;

/** Widths the resource, mode and phase columns start at, so the block does not shift as runs join it. */
const TEXT_WIDTHS = [Math.max(...RESOURCE_NAMES.map((name) => name.length)), 'incremental'.length, 'interrupted'.length];

interface Row {
  progress: ResourceProgress;
  live: LiveProgress | undefined;
  /** When the last report came (a finished run keeps the time it took). */
  at: number;
}

/** A cell: text, left-aligned; a right-aligned one; or a number with its unit (numbers right, units left). */
type Cell = string | { right: string } | { count: string; unit: string };

/**
 * A live block on a terminal: one line per run (resource and kind) with its phase, pages, records, requests, rate,
 * elapsed time and an ETA when the run knows what to expect, then a total line. Redrawn when a report comes and every
 * second besides. `stop()` leaves its last frame in the scrollback and ends it: nothing of it is drawn again (a later
 * run's first report starts a block of its own). Log lines are written above it so neither garbles the other. On a
 * stream that is not a terminal it draws nothing: log lines pass through.
 */
export class ProgressDisplay implements ProgressSink {
  private readonly rows = new Map<string, Row>();
  private readonly draw: ReturnType<typeof createLogUpdate>;
  private readonly terminal: boolean;
  private ticker: NodeJS.Timeout | undefined;
  private pendingFrame: NodeJS.Timeout | undefined;
  /** A frame is on the screen and will be redrawn. */
  private onScreen = false;
  private stopped = false;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.draw = createLogUpdate(stream);
    this.terminal = stream.isTTY === true;
  }

  update(progress: Readonly<ResourceProgress>, live?: LiveProgress): void {
    if (!this.terminal) return;
    if (this.stopped) {
      // A straggling final report belongs to the block already ended; a run under way starts the next block.
      if (isFinishedPhase(progress.phase)) return;
      this.stopped = false;
      this.rows.clear();
    }
    this.rows.set(`${progress.resource} ${progress.mode ?? ''}`, { progress: { ...progress }, live, at: this.now() });
    this.ticker ??= setInterval(() => this.render(), TICK_MS).unref();
    this.pendingFrame ??= setTimeout(() => {
      this.pendingFrame = undefined;
      this.render();
    }, REPORT_FRAME_MS).unref();
  }

  /** Write a line that stays in the scrollback, above the live block. */
  log(line: string): void {
    const text = line.endsWith('\n') ? line : `${line}\n`;
    if (!this.onScreen) {
      this.stream.write(text);
      return;
    }
    this.draw.clear();
    this.stream.write(text);
    this.render();
  }

  /** Draw the final frame once, leave it in the scrollback, and draw nothing more. Idempotent. */
  stop(): void {
    clearInterval(this.ticker);
    clearTimeout(this.pendingFrame);
    this.ticker = this.pendingFrame = undefined;
    if (this.stopped) return;
    this.stopped = true;
    if (this.rows.size > 0) {
      this.draw(this.frame());
      this.draw.done();
    }
    this.onScreen = false;
  }

  private render(): void {
    if (this.stopped || this.rows.size === 0) return;
    this.draw(this.frame());
    this.onScreen = true;
  }

  private frame(): string {
    const now = this.now();
    const rows = [...this.rows.values()];
    const lines: Cell[][] = [];
    let requests = 0;
    for (const row of rows) {
      const p = row.progress;
      const finished = isFinishedPhase(p.phase);
      // Requests go on between reports (a page of single views): read them live while the run is under way.
      const made = finished || !row.live ? p.requests : Math.max(p.requests, row.live.requests());
      requests += made;
      const elapsed = Math.max(1, (finished ? row.at : now) - p.startedAtMs);
      const eta = estimateRemainingMs(p.records, p.expected, elapsed, p.recordsBefore);
      lines.push([
        p.resource,
        (p.mode ?? '') + (p.resumed ? ' (resumed)' : ''),
        p.phase,
        countCell(p.pages, 'page'),
        // A resumed walk counts on from the records its earlier runs received.
        countCell(p.recordsBefore + p.records, 'record'),
        countCell(p.written, 'written', 'written'),
        countCell(made, 'request'),
        countCell(ratePerMinute(made, elapsed), 'req/min', 'req/min'),
        { right: formatDuration(elapsed) },
        finished ? '' : formatEta(eta),
      ]);
    }
    const sum = (pick: (p: ResourceProgress) => number) => rows.reduce((n, row) => n + pick(row.progress), 0);
    const finished = rows.filter((row) => isFinishedPhase(row.progress.phase));
    const startedAt = Math.min(...rows.map((row) => row.progress.startedAtMs));
    const endedAt = finished.length === rows.length ? Math.max(...rows.map((row) => row.at)) : now;
    const elapsed = Math.max(1, endedAt - startedAt);
    lines.push([
      'total',
      '',
      `${finished.length}/${rows.length} done`,
      countCell(
        sum((p) => p.pages),
        'page',
      ),
      countCell(
        sum((p) => p.recordsBefore + p.records),
        'record',
      ),
      countCell(
        sum((p) => p.written),
        'written',
        'written',
      ),
      countCell(requests, 'request'),
      countCell(ratePerMinute(requests, elapsed), 'req/min', 'req/min'),
      { right: formatDuration(elapsed) },
      '',
    ]);
    return alignColumns(lines);
  }
}

/** `ETA 1m05s`; `ETA —` when nothing says; `ETA >24h00m` at the cap. */
export function formatEta(etaMs: number | null): string {
  if (etaMs === null) return 'ETA —';
  return etaMs >= MAX_ETA_MS ? `ETA >${formatDuration(MAX_ETA_MS)}` : `ETA ${formatDuration(etaMs)}`;
}

function ratePerMinute(requests: number, elapsedMs: number): number {
  return Math.round((requests / Math.max(1, elapsedMs)) * 60_000);
}

function countCell(n: number, singular: string, plural?: string): Cell {
  return { count: formatNumber(n), unit: noun(n, singular, plural) };
}

/** Lines of cells as aligned columns: text left, times right, counts by their digits with their units after. */
function alignColumns(lines: Cell[][]): string {
  const columns = Math.max(...lines.map((cells) => cells.length));
  const widths = Array.from({ length: columns }, (_, i) => {
    const cells = lines.map((cells) => cells[i] ?? '');
    return {
      text: Math.max(TEXT_WIDTHS[i] ?? 0, ...cells.map((c) => (typeof c === 'string' ? c.length : 'right' in c ? c.right.length : 0))),
      count: Math.max(...cells.map((c) => (typeof c === 'object' && 'count' in c ? c.count.length : 0))),
      unit: Math.max(...cells.map((c) => (typeof c === 'object' && 'count' in c ? c.unit.length : 0))),
    };
  });
  return lines
    .map((cells) =>
      cells
        .map((cell, i) => {
          const w = widths[i] ?? { text: 0, count: 0, unit: 0 };
          if (typeof cell === 'string') return cell.padEnd(w.text);
          if ('right' in cell) return cell.right.padStart(w.text);
          return `${cell.count.padStart(w.count)} ${cell.unit.padEnd(w.unit)}`;
        })
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
