/**
 * DuckDB's worker threads in the writer. A commit's statements are small (a batch of rows): spread over every
 * core they cost about twice the CPU for a little less wall time (measured on 2 cores: a 10,000-row stage took
 * 121 ms of CPU on 2 threads, 57 ms on 1), and the core they take is the one the sync's own JS (decoding pages,
 * encoding the next batch) needs. So the writer leaves one core to the process. Readers of the published file
 * open it with DuckDB's own default.
 */
import { availableParallelism } from 'node:os';

export function writerThreads(cores: number = availableParallelism()): number {
  return Math.max(1, cores - 1);
}
