import stringWidth from 'string-width';

/** Pad to a display width: Japanese characters take two terminal columns. */
function padDisplay(text: string, width: number, alignRight: boolean): string {
  const pad = ' '.repeat(Math.max(0, width - stringWidth(text)));
  return alignRight ? pad + text : text + pad;
}

/** A plain aligned text table: numbers right-aligned, everything else left. */
export function formatTable(headers: string[], rows: Array<Array<string | number | null | undefined>>): string {
  const cells = rows.map((row) =>
    row.map((c) => (c === null || c === undefined ? '-' : typeof c === 'number' ? c.toLocaleString('en-US') : c)),
  );
  const numeric = headers.map(
    (_, i) => rows.length > 0 && rows.every((row) => typeof row[i] === 'number' || row[i] === null || row[i] === undefined),
  );
  // A loop, not Math.max(...cells): spreading 100k+ rows overflows the call stack.
  const widths = headers.map((h, i) => cells.reduce((widest, row) => Math.max(widest, stringWidth(row[i] ?? '')), stringWidth(h)));
  const line = (row: string[]) =>
    row
      .map((c, i) => padDisplay(c, widths[i] ?? 0, numeric[i] ?? false))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

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
