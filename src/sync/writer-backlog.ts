/**
 * Rows handed to the warehouse's one writer and not yet written (or failed), summed over every walk that shares
 * it. One per process (its environment makes it): concurrent walks then hold together what the writer can take
 * next, rather than each as much again; what they hold beyond that is memory and no speed.
 */
export class WriterBacklog {
  private held = 0;

  /** @param whileWaiting runs each time a walk is about to wait for the writer (the process's idle work). */
  constructor(private readonly whileWaiting: () => void = () => undefined) {}

  get rows(): number {
    return this.held;
  }

  add(rows: number): void {
    this.held += rows;
  }

  release(rows: number): void {
    this.held -= rows;
  }

  /** A walk is about to wait for its commits: the main thread has nothing else of it to do. */
  waiting(): void {
    this.whileWaiting();
  }
}
