import type { Query } from '../../sql/syntax.ts';
import { walk } from '../../sql/walk.ts';

/**
 * Which columns of its tables a query may read, judged by names alone: a column is read when any
 * identifier anywhere in the query has a part of its name, a USING list or a `(..).field` names it;
 * every column is read when the query has a `*` or uses a table's name as a value (`to_json_string(t)`).
 * Over-approximate on purpose: a scan leaves out only what no part of the query could name, and the
 * engine's table lacks what was left out, so a mistake here fails as an unknown name, never as a
 * wrong answer. Paths inside metadata are not narrowed: Elasticsearch drops a record left empty by
 * `_source` filtering from its array, which would change what an unnest of that array returns.
 */
export class ColumnReads {
  /** Every identifier part, field name and USING column, lower-cased. */
  private readonly names = new Set<string>();
  /** Identifiers of one part: a column, a select alias, or a table used as a value. */
  private readonly bareNames = new Set<string>();
  private wildcard = false;

  private constructor() {}

  static of(query: Query): ColumnReads {
    const reads = new ColumnReads();
    walk(query, {
      expr: (expr) => {
        if (expr.kind === 'identifier') reads.noteName(expr.path);
        else if (expr.kind === 'field') reads.names.add(expr.field.toLowerCase());
      },
      selectItem: (item) => {
        if (item.kind === 'wildcard') reads.wildcard = true;
      },
      join: (join) => {
        for (const column of join.using ?? []) reads.names.add(column.toLowerCase());
      },
    });
    return reads;
  }

  private noteName(path: readonly string[]): void {
    for (const part of path) this.names.add(part.toLowerCase());
    if (path.length === 1) this.bareNames.add(path[0]!.toLowerCase());
  }

  /**
   * The columns of `declared` that a table read under `name` (its alias, else its name) must
   * provide: never none, so every event is still a row (`count(*)` reads `id`, the smallest).
   */
  columnsOf(declared: readonly string[], name: string): string[] {
    if (this.wildcard || this.bareNames.has(name.toLowerCase())) return [...declared];
    const read = declared.filter((column) => this.names.has(column.toLowerCase()));
    if (read.length > 0) return read;
    return declared.includes('id') ? ['id'] : declared.slice(0, 1);
  }
}
