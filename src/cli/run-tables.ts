/** The tables `sync`, `reconcile` and the demo print for a person at a terminal, one row per walk. */
import type { ReconcileReport, SyncReport } from '../sync/index.js';
import { formatCount, formatDuration } from './format.js';
import { formatTable } from './table.js';

export function formatSyncReport(report: SyncReport): string {
  const table = formatTable(
    ['resource', 'mode', 'outcome', 'pages', 'written', 'rejected', 'requests', '429s', 'time'],
    [...report.results, ...(report.summaries ? [report.summaries] : [])].map((r) => [
      r.resource,
      r.mode + (r.resumed ? ' (resumed)' : '') + (r.passes > 1 ? ` (${r.passes} passes)` : ''),
      r.outcome + (r.settled ? '' : ' (unsettled)'),
      r.pages,
      r.written,
      r.rejected,
      r.requests,
      r.rateLimited,
      formatDuration(r.durationMs),
    ]),
  );
  return `${table}\n\n${formatCount(report.requests, 'request')} in ${formatDuration(report.durationMs)}`;
}

export function formatReconcileReport(report: ReconcileReport): string {
  const table = formatTable(
    ['resource', 'mode', 'outcome', 'pages', 'written', 'changed', 'deleted', 'summaries', 'rejected', 'requests', 'time'],
    report.results.map((r) => [
      r.resource,
      (r.deep && r.mode === 'reconcile' ? 'reconcile --deep' : r.mode) + (r.resumed ? ' (resumed)' : ''),
      r.outcome,
      r.pages,
      r.written,
      r.changed,
      r.deleted,
      r.summariesChanged,
      r.rejected,
      r.requests,
      formatDuration(r.durationMs),
    ]),
  );
  return `${table}\n\n${formatCount(report.requests, 'request')} in ${formatDuration(report.durationMs)}`;
}
