import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { projectRoot } from '../../src/core/paths.js';

/**
 * Another process holding a DuckDB file open READ_ONLY, as an analyst's notebook or a BI tool would: it opens the
 * file, reports `deals` rows, answers each line on its stdin with a fresh count (through the same open handle),
 * and closes when its stdin ends.
 */
export interface DuckDbHolder {
  pid: number;
  /** `SELECT count(*) FROM deals` at the moment it opened. */
  dealsAtOpen: number;
  /** Count again through the handle it has held all along. */
  countDeals(): Promise<number>;
  /** Close the file and exit. */
  leave(): Promise<void>;
}

const SCRIPT = `
import { DuckDBInstance } from '@duckdb/node-api';
import { createInterface } from 'node:readline';
const instance = await DuckDBInstance.create(process.argv[1], { access_mode: 'READ_ONLY' });
const connection = await instance.connect();
const count = async () => String((await connection.runAndReadAll('SELECT count(*) FROM deals')).getRows()[0][0]);
process.stdout.write('open ' + (await count()) + '\\n');
const lines = createInterface({ input: process.stdin });
for await (const _ of lines) process.stdout.write('count ' + (await count()) + '\\n');
connection.closeSync();
instance.closeSync();
`;

export async function holdDuckDb(path: string): Promise<DuckDbHolder> {
  // Run from the project root so that the script resolves @duckdb/node-api from node_modules.
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT, path], {
    cwd: projectRoot(import.meta.url),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const pending: Array<{ resolve: (line: string) => void; reject: (error: Error) => void }> = [];
  let buffer = '';
  child.stdout.on('data', (d: Buffer) => {
    buffer += d.toString();
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      pending.shift()?.resolve(line);
    }
  });
  // One listener for the holder's life (one per line asked for would pile up past Node's ten).
  const exitedEarly = () => new Error(`DuckDB holder exited (${String(child.exitCode ?? child.signalCode)}): ${stderr}`);
  child.once('exit', () => {
    for (const waiter of pending.splice(0)) waiter.reject(exitedEarly());
  });
  const nextLine = () =>
    new Promise<string>((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) reject(exitedEarly());
      else pending.push({ resolve, reject });
    });
  const opened = await nextLine();
  const pid = child.pid!;
  return {
    pid,
    dealsAtOpen: Number(opened.split(' ')[1]),
    async countDeals() {
      const reply = nextLine();
      child.stdin.write('\n');
      return Number((await reply).split(' ')[1]);
    },
    async leave() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.stdin.end();
      await exited;
    },
  };
}
