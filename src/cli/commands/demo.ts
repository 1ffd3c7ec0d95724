import { runDemo, type DemoOutput } from '../../demo/run-demo.js';
import type { CliRuntime } from '../runtime.js';
import { formatTable } from '../table.js';
import { formatSyncReport } from '../run-tables.js';

export async function demoCommand(runtime: CliRuntime): Promise<void> {
  const output: DemoOutput = {
    heading: (text) => runtime.out(`\n${text}`),
    line: (text) => runtime.out(`  ${text.replace(/\n/g, '\n  ')}`),
    report: (report) => {
      runtime.display?.stop();
      runtime.out(indent(formatSyncReport(report)));
    },
    rows: (rows) => {
      const headers = Object.keys(rows[0] ?? {});
      runtime.out(
        indent(
          formatTable(
            headers,
            rows.map((row) => headers.map((h) => cell(row[h]))),
          ),
        ),
      );
    },
  };
  await runDemo({
    config: runtime.config,
    logger: runtime.logger,
    output,
    signal: runtime.signal,
    ...(runtime.display ? { progress: runtime.display } : {}),
  });
}

function cell(value: unknown): string | number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return value;
  return String(value);
}

function indent(text: string): string {
  return text.replace(/^/gm, '  ');
}
