import { Writable } from 'node:stream';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const HIDDEN = new Set(['level', 'time', 'msg', 'app', 'pid', 'hostname']);

/** One pino JSON line as a short human line: `12:00:01 WARN deals: message key=value`. Pure. */
export function humanLogLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.trimEnd();
  }
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 19) : '';
  const level = LEVELS[Number(entry.level)] ?? String(entry.level);
  const resource = typeof entry.resource === 'string' ? `${entry.resource}: ` : '';
  const extra = Object.entries(entry)
    .filter(([k, v]) => !HIDDEN.has(k) && k !== 'resource' && v !== null && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${time} ${level.padEnd(5)} ${resource}${String(entry.msg ?? '')}${extra ? ` ${extra}` : ''}`;
}

/** A pino destination that hands each formatted line to `write` (the progress display's scrollback). */
export function humanLogStream(write: (line: string) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) write(humanLogLine(line));
      callback();
    },
  });
}
