import { describe, expect, it } from 'vitest';
import { partitionLags } from '../../ingest/consumer-lag.ts';

describe('consumer lag per partition', () => {
  it('counts the messages between the committed offset and the end of the log', () => {
    const bounds = [
      { partition: 0, low: '0', high: '120' },
      { partition: 1, low: '0', high: '40' },
    ];
    expect(
      partitionLags(
        bounds,
        new Map([
          [0, '100'],
          [1, '40'],
        ]),
      ),
    ).toEqual([
      { partition: 0, lag: 20 },
      { partition: 1, lag: 0 },
    ]);
  });

  it('counts from the earliest retained message when nothing is committed or the commit was truncated away', () => {
    const bounds = [
      { partition: 0, low: '30', high: '50' },
      { partition: 1, low: '30', high: '50' },
      { partition: 2, low: '0', high: '0' },
    ];
    expect(
      partitionLags(
        bounds,
        new Map([
          [1, '10'],
          [2, '-1'],
        ]),
      ),
    ).toEqual([
      { partition: 0, lag: 20 },
      { partition: 1, lag: 20 },
      { partition: 2, lag: 0 },
    ]);
  });

  it('keeps offsets beyond 2^53 exact until the difference', () => {
    expect(partitionLags([{ partition: 0, low: '0', high: '9007199254741000' }], new Map([[0, '9007199254740993']]))).toEqual([{ partition: 0, lag: 7 }]);
  });
});
