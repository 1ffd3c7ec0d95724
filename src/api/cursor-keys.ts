/**
 * Which key's answer named each recent list cursor, for a pool of keys. The spec says to pass a cursor unchanged
 * and no more: a service may accept one only on the key it was given to, which a pool spreading a walk's pages
 * over its keys breaks on the second page (`KeyPool.cursorsBound`). Bounded: a walk needs only the cursors of its
 * pages in flight, a few per walk.
 */
export class CursorKeys {
  private readonly byCursor = new Map<string, string>();

  constructor(private readonly capacity = 1024) {}

  remember(cursor: string, keyId: string): void {
    this.byCursor.delete(cursor);
    this.byCursor.set(cursor, keyId);
    // Maps keep insertion order: the first entry is the oldest.
    if (this.byCursor.size > this.capacity) this.byCursor.delete(this.byCursor.keys().next().value!);
  }

  keyOf(cursor: string | null | undefined): string | undefined {
    return cursor ? this.byCursor.get(cursor) : undefined;
  }
}
