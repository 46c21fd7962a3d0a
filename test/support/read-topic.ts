import { Kafka, logLevel } from 'kafkajs';
import '../../ingest/codecs.ts';

/**
 * `node --import tsx test/support/read-topic.ts <brokers> <topic> <group> <count> [record-batches]`: reads the
 * first <count> messages a kafkajs consumer (read_committed) is handed from the topic's beginning and prints
 * them as JSON, one partition after the other in offset order. With `record-batches` the worker's record batch
 * decoder (ingest/record-batches.ts) is installed first; without, kafkajs decodes with its own.
 */
const [brokers, topic, group, count, decoder] = process.argv.slice(2);
if (decoder === 'record-batches') await import('../../ingest/record-batches.ts');

const base64 = (bytes: Buffer | null | undefined) => (bytes == null ? null : bytes.toString('base64'));
const kafka = new Kafka({ clientId: 'read-topic', brokers: brokers!.split(','), logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: group!, maxBytesPerPartition: 4096 });
const read: { partition: number; offset: string; timestamp: string; key: string | null; value: string | null; headers: unknown }[] = [];
await consumer.connect();
await consumer.subscribe({ topics: [topic!], fromBeginning: true });
await new Promise<void>((resolve) => {
  void consumer.run({
    eachMessage: async ({ partition, message }) => {
      const headers = Object.fromEntries(
        Object.entries(message.headers ?? {}).map(([name, value]) => [
          name,
          Array.isArray(value) ? value.map((one) => base64(one as Buffer)) : base64(value as Buffer),
        ]),
      );
      read.push({ partition, offset: message.offset, timestamp: message.timestamp, key: base64(message.key), value: base64(message.value), headers });
      if (read.length >= Number(count)) resolve();
    },
  });
});
await consumer.disconnect();
read.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
process.stdout.write(JSON.stringify(read));
