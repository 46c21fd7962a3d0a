import { describe, expect, it } from 'vitest';
import { bulkEntry, releaseEntries, type BulkEntry } from '../../ingest/bulk.ts';

const event = (id: string) => ({ id, timestamp: '2024-01-01T00:00:00.000000Z', event_message: `message ${id} ${'x'.repeat(200)}` });

/** Enough entries to fill several 256 KB slabs. */
function entries(prefix: string, count = 3000): { entry: BulkEntry; lines: Buffer }[] {
  return Array.from({ length: count }, (_, index) => {
    const entry = bulkEntry('logs-a', event(`${prefix}${index}`));
    return { entry, lines: Buffer.from(entry.lines) };
  });
}

const unchanged = (items: { entry: BulkEntry; lines: Buffer }[]) => items.every(({ entry, lines }) => entry.lines.equals(lines));

describe('bulk entry slabs', () => {
  it('fills the slabs of released entries again, and never the bytes of an entry still held', () => {
    const released = entries('a');
    const held = entries('b');
    releaseEntries(released);
    const later = entries('c');
    const releasedSlabs = new Set(released.map(({ entry }) => entry.slab));
    const heldSlabs = new Set(held.map(({ entry }) => entry.slab));
    // slabs wholly of released entries are reused; a slab shared with a held entry is not
    expect(later.some(({ entry }) => releasedSlabs.has(entry.slab) && !heldSlabs.has(entry.slab))).toBe(true);
    expect(later.some(({ entry }) => heldSlabs.has(entry.slab) && entry.slab !== held[held.length - 1]!.entry.slab)).toBe(false);
    expect(unchanged(held)).toBe(true);
    expect(unchanged(later)).toBe(true);
  });

  it('keeps a slab while one of its entries is held', () => {
    const items = entries('d');
    const kept = items[10]!;
    releaseEntries(items.filter((item) => item !== kept));
    const later = entries('e', 6000);
    expect(later.some(({ entry }) => entry.slab === kept.entry.slab)).toBe(false);
    expect(unchanged([kept, ...later])).toBe(true);
  });
});
