import { describe, expect, it } from 'vitest';
import { deadLetterTopicName } from '../../shared/sources.ts';
import { documentCount, produce, readDeadLetters, sourceIndex, waitFor, waitForCommittedToEnd, workerForFile } from '../support/ingest.ts';
import { sourceTopic } from '../../ingest/topics.ts';

describe('ingest: poison messages go to the dead-letter topic and the partition keeps flowing', () => {
  const { config, client, worker } = workerForFile('poison', { INGEST_MAX_MESSAGE_BYTES: '40000', INGEST_TOPIC_PARTITIONS: '1' });

  it('dead-letters each kind of poison with its reason and position, and indexes the good events behind it', async () => {
    // too many nested request records for the index: only Elasticsearch can tell, and it refuses for good
    const unindexable = JSON.stringify({ id: 'too-nested', event_message: 'x', metadata: { request: Array.from({ length: 10_001 }, () => ({})) } });
    const poison: [string | null, string][] = [
      ['{"event_message": "unterminated', 'invalid_json'],
      ['[1, 2]', 'not_an_object'],
      ['"a string"', 'not_an_object'],
      ['{"metadata": {"level": "info"}}', 'missing_event_message'],
      ['{"event_message": {"text": "hi"}}', 'event_message_not_string'],
      ['{"event_message": "x", "timestamp": "the day after tomorrow"}', 'invalid_timestamp'],
      ['{"event_message": "x", "timestamp": -5}', 'invalid_timestamp'],
      [JSON.stringify({ event_message: 'x'.repeat(50_000) }), 'too_large'],
      [null, 'empty_message'],
      ['{"message": "x", "id": {"retry": 1}}', 'invalid_id'],
    ];
    const messages: (string | null)[] = [];
    poison.forEach(([value], position) =>
      messages.push(value, JSON.stringify({ id: `good-${position}`, event_message: `good ${position}`, project: 'default' })),
    );
    await produce(config, 'edge_logs', messages, 0);
    await produce(config, 'edge_logs', [unindexable, JSON.stringify({ id: 'good-last', event_message: 'after the unindexable one' })], 0);

    // the array message [1, 2] yields two letters, one per element
    const expected = [...poison.map(([, reason]) => reason), 'not_an_object', 'unindexable'].sort();
    const letters = await readDeadLetters(config, deadLetterTopicName({ topicPrefix: config.TOPIC_PREFIX }, 'edge_logs'), expected.length);
    expect(letters.map((letter) => letter.headers['dead-letter-reason']).sort()).toEqual(expected);
    expect(
      letters.filter((letter) => letter.headers['source-element'] !== undefined).map((letter) => [letter.headers['source-element'], letter.value]),
    ).toEqual([
      ['0', '1'],
      ['1', '2'],
    ]);
    const topic = sourceTopic(config, 'edge_logs');
    for (const letter of letters) {
      expect(letter.headers['source-topic']).toBe(topic);
      expect(letter.headers['source-partition']).toBe('0');
      expect(Number(letter.headers['source-offset'])).toBeGreaterThanOrEqual(0);
      expect(letter.headers['dead-letter-detail']!.length).toBeGreaterThan(5);
    }
    const byReason = (reason: string) => letters.filter((letter) => letter.headers['dead-letter-reason'] === reason);
    expect(byReason('invalid_json')[0]!.value).toBe('{"event_message": "unterminated');
    expect(
      byReason('invalid_timestamp')
        .map((letter) => letter.headers['dead-letter-detail'])
        .join('\n'),
    ).toMatch(/the day after tomorrow/);
    expect(byReason('too_large')[0]!.value).toHaveLength(JSON.stringify({ event_message: 'x'.repeat(50_000) }).length);
    expect(byReason('unindexable')[0]!.headers['dead-letter-detail']).toMatch(/nested/);
    expect(byReason('unindexable')[0]!.value).toBe(unindexable);

    const index = sourceIndex(config, 'edge_logs');
    await waitFor('all good events', async () => ((await documentCount(client, index)) === poison.length + 1 ? true : undefined));
    const ids = (await client.search({ index, size: 100, _source: false })).hits.hits.map((hit) => hit._id).sort();
    expect(ids).toEqual([...poison.map((_, position) => `good-${position}`), 'good-last'].sort());
    await waitForCommittedToEnd(config, [topic]);

    const metrics = await (await fetch(`http://127.0.0.1:${worker().port}/metrics`)).text();
    expect(metrics).toMatch(/ingest_events_dead_lettered_total\{source="edge_logs",reason="invalid_timestamp"\} 2/);
    expect(metrics).toMatch(/ingest_events_dead_lettered_total\{source="edge_logs",reason="unindexable"\} 1/);
  });
});
