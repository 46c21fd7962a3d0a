import { describe, expect, it } from 'vitest';
import { OffsetCommits, type CommitOffsets } from '../../ingest/offset-commits.ts';

/** A consumer's commit that records each request and answers it when told. */
function recordingCommit(): { send: CommitOffsets; requests: unknown[]; fail(error: Error): void } {
  const requests: unknown[] = [];
  let failure: Error | undefined;
  const send: CommitOffsets = async (offsets) => {
    requests.push(offsets);
    if (failure) throw failure;
  };
  return { send, requests, fail: (error) => (failure = error) };
}

describe('offset commits', () => {
  it('sends the commits asked for together as one request, grouped by topic', async () => {
    const commits = new OffsetCommits();
    const { send, requests } = recordingCommit();
    await Promise.all([commits.commit(send, 'a', 0, '10'), commits.commit(send, 'b', 2, '7'), commits.commit(send, 'a', 1, '3')]);
    expect(requests).toEqual([
      {
        topics: [
          {
            topic: 'a',
            partitions: [
              { partition: 0, offset: '10' },
              { partition: 1, offset: '3' },
            ],
          },
          { topic: 'b', partitions: [{ partition: 2, offset: '7' }] },
        ],
      },
    ]);
  });

  it('sends a commit asked for after a request went out in a request of its own', async () => {
    const commits = new OffsetCommits();
    const { send, requests } = recordingCommit();
    await commits.commit(send, 'a', 0, '10');
    await commits.commit(send, 'a', 0, '20');
    expect(requests).toEqual([
      { topics: [{ topic: 'a', partitions: [{ partition: 0, offset: '10' }] }] },
      { topics: [{ topic: 'a', partitions: [{ partition: 0, offset: '20' }] }] },
    ]);
  });

  it('fails every caller of a failed request, so each rewinds its own chunk', async () => {
    const commits = new OffsetCommits();
    const { send, fail } = recordingCommit();
    fail(new Error('The coordinator is not aware of this member'));
    const results = await Promise.allSettled([commits.commit(send, 'a', 0, '10'), commits.commit(send, 'a', 1, '5')]);
    expect(results.map((result) => (result.status === 'rejected' ? (result.reason as Error).message : 'fulfilled'))).toEqual([
      'The coordinator is not aware of this member',
      'The coordinator is not aware of this member',
    ]);
  });
});
