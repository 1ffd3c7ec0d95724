import { createLogUpdate } from 'log-update';
import { isFinishedPhase, MAX_ETA_MS, type LiveProgress, type ProgressSink, type ResourceProgress } from '../sync/progress.js';
import { formatEta, TICK_MS } from './progress-display.js';
import { formatCount, formatDuration, formatNumber } from './format.js';

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
 * per changed log). A resumed backfill counts on from the records its earlier runs received (`recordsBefore`),
 * at this run's pace. Once as many records came as expected, nothing says how many more: no ETA. Capped at
 * MAX_ETA_MS. Pure.
 */
export function estimateBackfill(
  progress: Pick<ResourceProgress, 'pages' | 'records' | 'recordsBefore' | 'requests'>,
  elapsedMs: number,
  expectedRecords: number | null,
  requestsPerMinute: number,
): BackfillEstimate {
  if (expectedRecords === null || expectedRecords <= 0) return { etaMs: null, fraction: null };
  const received = progress.recordsBefore + progress.records;
  const fraction = Math.min(1, received / expectedRecords);
  if (received >= expectedRecords) return { etaMs: null, fraction };
  const remainingRecords = Math.max(0, expectedRecords - received);
  const requestsPerPage = progress.pages > 0 ? Math.max(1, progress.requests / progress.pages) : 1;
  const budgetMs = (Math.ceil(remainingRecords / PAGE_SIZE) * requestsPerPage * 60_000) / Math.max(1, requestsPerMinute);
  const observedMs = progress.records > 0 && elapsedMs > 0 ? (remainingRecords * elapsedMs) / progress.records : 0;
  return { etaMs: Math.min(MAX_ETA_MS, Math.round(Math.max(budgetMs, observedMs))), fraction };
}

/**
 * One live line on a terminal: a bar, pages, records, request rate and the ETA, redrawn on each report and every
 * second besides (the clock and the rate move while single views are fetched). After `stop()` nothing is drawn.
 */
export class BackfillProgressLine implements ProgressSink {
  private readonly draw: ReturnType<typeof createLogUpdate>;
  private last: { progress: ResourceProgress; live: LiveProgress | undefined; at: number } | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    stream: NodeJS.WriteStream,
    private readonly expectedRecords: number | null,
    private readonly requestsPerMinute: number,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.draw = createLogUpdate(stream);
  }

  update(p: Readonly<ResourceProgress>, live?: LiveProgress): void {
    if (this.stopped) return;
    this.last = { progress: { ...p }, live, at: this.now() };
    this.ticker ??= setInterval(() => this.render(), TICK_MS).unref();
    this.render();
  }

  stop(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
    if (this.stopped) return;
    this.stopped = true;
    this.draw.done();
  }

  private render(): void {
    if (this.stopped || !this.last) return;
    const { progress, live, at } = this.last;
    const finished = isFinishedPhase(progress.phase);
    const p = { ...progress, requests: finished || !live ? progress.requests : Math.max(progress.requests, live.requests()) };
    const elapsed = Math.max(1, (finished ? at : this.now()) - p.startedAtMs);
    const { etaMs, fraction } = estimateBackfill(p, elapsed, this.expectedRecords, this.requestsPerMinute);
    const width = 24;
    const filled = fraction === null ? 0 : Math.round(fraction * width);
    const bar = fraction === null ? '' : `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.round(fraction * 100)}% `;
    const rate = Math.round((p.requests / elapsed) * 60_000);
    const figures = [
      formatCount(p.pages, 'page'),
      formatCount(p.recordsBefore + p.records, 'record'),
      `${formatNumber(p.written)} written`,
      formatCount(p.requests, 'request'),
      `${formatNumber(rate)} req/min`,
      formatDuration(elapsed),
      ...(finished ? [] : [formatEta(etaMs)]),
    ];
    this.draw(`${p.resource} backfill ${p.phase}${p.resumed ? ' (resumed)' : ''}  ${bar}${figures.join(', ')}`);
  }
}
