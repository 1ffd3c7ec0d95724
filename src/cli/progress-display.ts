import { createLogUpdate } from 'log-update';
import type { ResourceName } from '../core/resources.js';
import type { ProgressSink, ResourceProgress } from '../sync/progress.js';
import { formatDuration } from './table.js';

/**
 * A live block of one line per resource on a terminal (pages, records, request rate), redrawn at most a few
 * times a second. Log lines are written above it so neither garbles the other.
 */
export class ProgressDisplay implements ProgressSink {
  private readonly rows = new Map<ResourceName, { progress: ResourceProgress; at: number }>();
  private readonly draw: ReturnType<typeof createLogUpdate>;
  private timer: NodeJS.Timeout | undefined;
  private dirty = false;

  constructor(private readonly stream: NodeJS.WriteStream, private readonly now: () => number = Date.now) {
    this.draw = createLogUpdate(stream);
  }

  update(progress: Readonly<ResourceProgress>): void {
    this.rows.set(progress.resource, { progress: { ...progress }, at: this.now() });
    this.dirty = true;
    this.timer ??= setInterval(() => this.render(), 200).unref();
  }

  /** Write a line that stays in the scrollback, above the live block. */
  log(line: string): void {
    this.draw.clear();
    this.stream.write(line.endsWith('\n') ? line : `${line}\n`);
    this.dirty = true;
    this.render();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.rows.size > 0) {
      this.dirty = true;
      this.render();
      this.draw.done();
    }
  }

  private render(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const now = this.now();
    const lines = [...this.rows.values()].map(({ progress: p, at }) => {
      // A finished resource keeps the time it took; a running one counts up.
      const finished = p.phase === 'done' || p.phase === 'failed' || p.phase === 'interrupted';
      const elapsed = Math.max(1, (finished ? at : now) - p.startedAtMs);
      const rate = (p.requests / elapsed) * 60_000;
      return [
        p.resource.padEnd(19),
        (p.phase + (p.resumed ? '*' : '')).padEnd(12),
        `${p.pages.toLocaleString('en-US').padStart(6)} pages`,
        `${p.records.toLocaleString('en-US').padStart(9)} records`,
        `${p.written.toLocaleString('en-US').padStart(9)} written`,
        `${p.requests.toLocaleString('en-US').padStart(6)} req`,
        `${Math.round(rate).toLocaleString('en-US').padStart(6)} req/min`,
        formatDuration(elapsed).padStart(7),
      ].join(' ');
    });
    this.draw(lines.join('\n'));
  }
}
