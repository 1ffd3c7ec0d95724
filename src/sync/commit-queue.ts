import { WriterBacklog } from './writer-backlog.js';

/**
 * Commits a walk may have in flight before it waits for the oldest. Two let the next batch encode while the one
 * before it is written. A walk that did not have to wait last time is bound by the service, not the writer: one
 * more may go ahead, so a slow commit (a checkpoint) does not stall its fetching. A walk that outruns the writer
 * waits every time and stays at two, where a third would only hold more records. Pure.
 */
export function commitsAllowed(waitedLastTime: boolean): number {
  return waitedLastTime ? 2 : 3;
}

/**
 * A commit's write. `discard`, when given, lets go of what the prepared commit holds (its batch's stage file) if
 * it is never written: a commit before it failed.
 */
export type CommitWrite = (() => Promise<void>) & { discard?: () => void };

/**
 * The commits of one walk, written one after another in the order they were queued while the walk goes on
 * fetching; `push` waits while `commitsAllowed` are in flight, and while the process's writer backlog (every
 * walk's queued rows) holds `backlogCap` rows or more and this walk has a commit of its own to wait for. The
 * first failure is kept: no commit queued after it writes (so a checkpoint never moves past pages that failed to
 * commit; each is discarded instead), and `push` and `drain` rethrow it.
 */
export class CommitQueue {
  /** The last commit queued: the next one writes only once it has succeeded. */
  private tail: Promise<void> = Promise.resolve();
  /** Commits not yet looked at, oldest first (resolved even on failure: `failure` holds it). */
  private readonly pending: Promise<void>[] = [];
  private writing = 0;
  private waited = false;
  private failure: { error: unknown } | null = null;

  constructor(
    private readonly backlog: WriterBacklog = new WriterBacklog(),
    private readonly backlogCap = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * Whether one of this walk's commits is still being written (queued behind others' included). The walk then lets
   * its next batch grow (`shouldFlush`) rather than hand over a small one: a commit queued behind another is
   * written no sooner for being small, and fewer, larger ones cost the writer less (`BATCH_GROWTH`).
   */
  get busy(): boolean {
    return this.writing > 0;
  }

  private get backlogAtCap(): boolean {
    return this.backlog.rows >= this.backlogCap;
  }

  /** Rethrow the first failure of a commit, if one failed. */
  throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }

  /**
   * Queue a commit: once fewer than `commitsAllowed` are in flight, `prepare` decides what it writes (and may start
   * encoding it) and returns the write, which runs after every earlier commit has been written. `onWritten` runs
   * when it has been. `rows`: what the commit holds, counted in the backlog until it is written or has failed.
   */
  async push(prepare: () => CommitWrite, onWritten?: () => void, rows = 0): Promise<void> {
    const allowed = commitsAllowed(this.waited);
    this.waited = this.writing >= allowed;
    const mustWait = () => this.pending.length >= allowed || (this.pending.length > 0 && this.backlogAtCap);
    if (mustWait()) this.backlog.waiting();
    while (mustWait()) await this.settleOldest();
    this.throwIfFailed();
    const write = prepare();
    this.writing += 1;
    this.backlog.add(rows);
    const commit = this.tail.then(write, (error: unknown) => {
      write.discard?.();
      throw error;
    });
    this.tail = commit;
    this.pending.push(
      commit
        .finally(() => {
          this.writing -= 1;
          this.backlog.release(rows);
        })
        .then(
          () => onWritten?.(),
          (error: unknown) => {
            this.failure ??= { error };
          },
        ),
    );
  }

  /** Wait for every commit queued; rethrows the first failure. */
  async drain(): Promise<void> {
    while (this.pending.length > 0) await this.settleOldest();
    this.throwIfFailed();
  }

  private async settleOldest(): Promise<void> {
    await this.pending.shift();
    this.throwIfFailed();
  }
}
