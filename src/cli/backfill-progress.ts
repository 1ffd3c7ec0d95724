import { createLogUpdate } from 'log-update';
import type { ProgressSink, ResourceProgress } from '../sync/progress.js';
import { formatDuration } from './table.js';

/** Records per list page (the client asks for the service's maximum). */
const PAGE_SIZE = 200;

export interface BackfillEstimate {
  /** Milliseconds left, or null when nothing says how much is left. */
  etaMs: number | null;
  /** 0–1, or null when the total is unknown. */
  fraction: number | null;
}

/**
 * How long a backfill has left. The service never says how many records a window holds, so the expected count
 * is what the warehouse already has in that window (null when it has nothing). The pace is the observed one,
 * but never faster than the rate budget allows: each page costs at least one request (meeting logs one more
 * per changed log). Pure.
 */
export function estimateBackfill(
  progress: Pick<ResourceProgress, 'pages' | 'records' | 'requests'>,
  elapsedMs: number,
  expectedRecords: number | null,
  requestsPerMinute: number,
): BackfillEstimate {
  if (expectedRecords === null || expectedRecords <= 0) return { etaMs: null, fraction: null };
  const fraction = Math.min(1, progress.records / expectedRecords);
  const remainingRecords = Math.max(0, expectedRecords - progress.records);
  const requestsPerPage = progress.pages > 0 ? Math.max(1, progress.requests / progress.pages) : 1;
  const budgetMs = (Math.ceil(remainingRecords / PAGE_SIZE) * requestsPerPage * 60_000) / Math.max(1, requestsPerMinute);
  const observedMs = progress.records > 0 && elapsedMs > 0 ? (remainingRecords * elapsedMs) / progress.records : 0;
  return { etaMs: Math.round(Math.max(budgetMs, observedMs)), fraction };
}

/** One live line on a terminal: a bar, pages, records, request rate and the ETA. */
export class BackfillProgressLine implements ProgressSink {
  private readonly draw: ReturnType<typeof createLogUpdate>;

  constructor(
    stream: NodeJS.WriteStream,
    private readonly expectedRecords: number | null,
    private readonly requestsPerMinute: number,
    private readonly now: () => number = Date.now,
  ) {
    this.draw = createLogUpdate(stream);
  }

  update(p: Readonly<ResourceProgress>): void {
    const elapsed = Math.max(1, this.now() - p.startedAtMs);
    const { etaMs, fraction } = estimateBackfill(p, elapsed, this.expectedRecords, this.requestsPerMinute);
    const width = 24;
    const filled = fraction === null ? 0 : Math.round(fraction * width);
    const bar = fraction === null ? '' : `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.round(fraction * 100)}% `;
    const rate = Math.round((p.requests / elapsed) * 60_000);
    const eta = p.phase === 'done' ? 'done' : etaMs === null ? 'ETA unknown' : `ETA ${formatDuration(etaMs)}`;
    this.draw(
      `${p.resource} backfill ${p.phase}${p.resumed ? ' (resumed)' : ''}  ${bar}${p.pages} pages, ${p.records} records, ${p.written} written, ` +
        `${rate} req/min, ${formatDuration(elapsed)}, ${eta}`,
    );
  }

  stop(): void {
    this.draw.done();
  }
}
