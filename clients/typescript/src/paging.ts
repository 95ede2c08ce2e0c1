/**
 * Listings as async iterators: `for await (const item of client.iterDecisions(agentId))` walks every item,
 * page after page, following `next_cursor` until it is null; `.pages()` walks the pages themselves.
 */

/** A page of a listing: its items and the cursor of the next page (null: this is the last). */
export interface Page<T> {
  items: T[];
  next_cursor?: string | null;
}

/** Every item of a listing, fetched a page at a time (`fetchPage(cursor)`: the page at that cursor). */
export class Paged<T, P extends Page<T> = Page<T>> implements AsyncIterable<T> {
  readonly #fetchPage: (cursor: string | undefined) => Promise<P>;

  constructor(fetchPage: (cursor: string | undefined) => Promise<P>) {
    this.#fetchPage = fetchPage;
  }

  /** The pages in order, the first without a cursor, each next one at the cursor the one before names. */
  async *pages(): AsyncGenerator<P, void, undefined> {
    let cursor: string | undefined = undefined;
    for (;;) {
      const page: P = await this.#fetchPage(cursor);
      yield page;
      if (page.next_cursor === null || page.next_cursor === undefined) return;
      cursor = page.next_cursor;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  /** Every item in one array (for small listings). */
  async toArray(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
