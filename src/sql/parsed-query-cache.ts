import { freezeTree } from './frozen-tree.ts';
import type { SandboxQueryOptions } from './index.ts';
import type { Query } from './syntax.ts';

export interface ParsedQueryCacheLimits {
  /** Distinct query texts kept. */
  maxEntries: number;
  /** Their summed length in characters (a long text makes a large syntax tree). */
  maxTextChars: number;
}

export const PARSED_QUERY_CACHE_LIMITS: ParsedQueryCacheLimits = { maxEntries: 256, maxTextChars: 2 * 1024 * 1024 };

/**
 * Dashboards send the same sandboxed SQL again and again: only parameter values change, and they
 * travel apart from the text. Parsing is done by a WebAssembly parser in one shared thread, so
 * successful parses are kept by text and options, least recently used first out; refusals are not
 * kept. Every caller gets the same tree, frozen (a copy per request cost up to a millisecond).
 */
export class ParsedQueryCache {
  private readonly entries = new Map<string, { query: Query; chars: number }>();
  private chars = 0;

  constructor(
    private readonly parse: (text: string, options: SandboxQueryOptions) => Promise<Query>,
    private readonly limits: ParsedQueryCacheLimits = PARSED_QUERY_CACHE_LIMITS,
  ) {}

  async get(text: string, options: SandboxQueryOptions): Promise<Query> {
    const key = JSON.stringify([text, options.allowedTables, options.parameterNames ?? [], options.limits ?? null]);
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.query;
    }
    const query = freezeTree(await this.parse(text, options));
    if (text.length <= this.limits.maxTextChars && !this.entries.has(key)) {
      this.entries.set(key, { query, chars: text.length });
      this.chars += text.length;
      while (this.entries.size > this.limits.maxEntries || this.chars > this.limits.maxTextChars) {
        const [oldest, entry] = this.entries.entries().next().value!;
        this.entries.delete(oldest);
        this.chars -= entry.chars;
      }
    }
    return query;
  }

  get size(): number {
    return this.entries.size;
  }
}
