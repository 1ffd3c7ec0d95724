/** How counts and durations read wherever the CLI shows them (no dependencies: loaded by every command). */

/** A whole number grouped by thousands, the way every count is shown: `12,345`. */
export function formatNumber(n: number): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: 0 });
}

/** The noun that agrees with `n`: `page` for 1, `pages` otherwise (give `plural` when it is not `+s`). */
export function noun(n: number, singular: string, plural = `${singular}s`): string {
  return n === 1 ? singular : plural;
}

/** A count with its noun, grouped and agreeing in number: `1 page`, `12,345 pages`, `1 company` (with `companies`). */
export function formatCount(n: number, singular: string, plural?: string): string {
  return `${formatNumber(n)} ${noun(n, singular, plural)}`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.round(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}
