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
