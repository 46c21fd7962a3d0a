import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkaLogLevel } from '../../ingest/kafka.ts';

describe('kafkajs log levels', () => {
  it('writes answers of a cluster still settling at debug, whatever level kafkajs gave them', () => {
    // what kafkajs logs on every start while the group coordinator loads its offsets
    expect(kafkaLogLevel(logLevel.ERROR, { error: "The coordinator is loading and hence can't process requests for this group" })).toBe('debug');
    expect(kafkaLogLevel(logLevel.ERROR, { error: 'This is not the correct coordinator for this group' })).toBe('debug');
    expect(kafkaLogLevel(logLevel.ERROR, { error: 'There is no leader for this topic-partition as we are in the middle of a leadership election' })).toBe(
      'debug',
    );
    expect(kafkaLogLevel(logLevel.ERROR, { error: 'The group is rebalancing, so a rejoin is needed' })).toBe('debug');
  });

  it('keeps every other entry at its own level', () => {
    expect(kafkaLogLevel(logLevel.ERROR, { error: 'Connection error: connect ECONNREFUSED 127.0.0.1:9092' })).toBe('error');
    expect(kafkaLogLevel(logLevel.ERROR, { error: 'The specified topic partition not hosted' })).toBe('error');
    expect(kafkaLogLevel(logLevel.ERROR, { error: 'SASL PLAIN authentication failed' })).toBe('error');
    expect(kafkaLogLevel(logLevel.ERROR, {})).toBe('error');
    expect(kafkaLogLevel(logLevel.WARN, { error: 'anything' })).toBe('warn');
    expect(kafkaLogLevel(logLevel.INFO, {})).toBe('info');
  });
});
