/**
 * The most DuckDB text one query may translate to (SANDBOX_MAX_TRANSLATED_CHARS). Every piece is
 * measured as it is built: each translated expression and query, each select list as its columns
 * are added, and each list before it is joined. A piece is part of the final text, so no piece may
 * pass the budget, and the translation stops at the first one that does. Measuring is cheap: the
 * pieces are concatenations, whose length is known without copying them.
 */
import { QueryTooExpensive, type QueryPosition } from '../../errors.ts';

export class SqlBudget {
  constructor(readonly maxChars: number) {}

  /** Throws once `chars` characters of translation pass the budget. */
  check(chars: number, position?: QueryPosition): void {
    if (chars <= this.maxChars) return;
    throw new QueryTooExpensive(
      `the query translates to more than ${this.maxChars} characters of engine SQL (limit SANDBOX_MAX_TRANSLATED_CHARS); use fewer columns, ` +
        'fewer union branches, fewer references to a long select-list alias, or less nesting of functions',
      position,
    );
  }

  /** `parts` joined by `separator`, refused before joining when together they pass the budget. */
  join(parts: readonly string[], separator: string, position?: QueryPosition): string {
    this.check(
      parts.reduce((total, part) => total + part.length + separator.length, 0),
      position,
    );
    return parts.join(separator);
  }
}
