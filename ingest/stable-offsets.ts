import { createRequire } from 'node:module';
import type { Kafka } from 'kafkajs';

// kafkajs 2.2.4 speaks OffsetFetch up to version 4 only; version 7 adds require_stable. Its own encoder,
// decoder, error table and broker connections are reused, so TLS and SASL work as for every other request.
const kafkajsModule = createRequire(import.meta.url);
const Encoder = kafkajsModule('kafkajs/src/protocol/encoder.js') as new () => KafkajsEncoder;
const Decoder = kafkajsModule('kafkajs/src/protocol/decoder.js') as new (buffer: Buffer) => KafkajsDecoder;
const { createErrorFromCode } = kafkajsModule('kafkajs/src/protocol/error.js') as { createErrorFromCode: (code: number) => Error & { retriable?: boolean } };
// kafkajs's own transactional-id initialisation (coordinator lookup, InitProducerId, its retries while an ended
// transaction completes), run on the shared cluster: a fence needs no producer of its own
const createEosManager = kafkajsModule('kafkajs/src/producer/eosManager/index.js') as (options: {
  logger: unknown;
  cluster: KafkajsCluster;
  transactional: true;
  transactionalId: string;
}) => { initProducerId(): Promise<void> };

interface KafkajsEncoder {
  writeInt32(value: number): KafkajsEncoder;
  writeBoolean(value: boolean): KafkajsEncoder;
  writeUVarInt(value: number): KafkajsEncoder;
  writeUVarIntString(value: string): KafkajsEncoder;
}
interface KafkajsDecoder {
  readInt16(): number;
  readInt32(): number;
  readInt64(): { toString(): string };
  readUVarInt(): number;
  readUVarIntString(): string | null;
  readTaggedFields(): void;
}
interface KafkajsBroker {
  connectionPool: { send(protocol: { request: unknown; response: unknown }): Promise<unknown> };
}
interface KafkajsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  findGroupCoordinator(options: { groupId: string }): Promise<KafkajsBroker>;
}

const OFFSET_FETCH_API_KEY = 9;
const OFFSET_FETCH_STABLE_VERSION = 7;
export const UNSTABLE_OFFSET_COMMIT = 88;
/** The group coordinator moved or is loading its offsets: ask again after finding it. */
const COORDINATOR_ERRORS = new Set([14, 15, 16]);

export interface PartitionOffset {
  /** The committed offset, -1 when none. */
  offset: bigint;
  errorCode: number;
}

/** OffsetFetch v7 for one partition (a flexible version: compact strings and arrays, tagged fields). */
export function offsetFetchRequest(groupId: string, topic: string, partition: number) {
  return {
    apiKey: OFFSET_FETCH_API_KEY,
    apiVersion: OFFSET_FETCH_STABLE_VERSION,
    apiName: 'OffsetFetch',
    encode: async () =>
      new Encoder()
        // kafkajs writes the version 1 request header; a flexible request's header ends with its tagged fields
        .writeUVarInt(0)
        .writeUVarIntString(groupId)
        .writeUVarInt(2)
        .writeUVarIntString(topic)
        .writeUVarInt(2)
        .writeInt32(partition)
        .writeUVarInt(0)
        .writeBoolean(true)
        .writeUVarInt(0),
  };
}

/** The OffsetFetch v7 answer for that one partition (the group's own error, when set, wins). */
export function decodeOffsetFetch(payload: Buffer, topic: string, partition: number): PartitionOffset {
  const decoder = new Decoder(payload);
  // the flexible response header's tagged fields, which kafkajs leaves at the front of the payload
  decoder.readTaggedFields();
  decoder.readInt32();
  let found: PartitionOffset | undefined;
  const topics = decoder.readUVarInt() - 1;
  for (let t = 0; t < topics; t++) {
    const name = decoder.readUVarIntString();
    const partitions = decoder.readUVarInt() - 1;
    for (let p = 0; p < partitions; p++) {
      const index = decoder.readInt32();
      const offset = BigInt(decoder.readInt64().toString());
      decoder.readInt32();
      decoder.readUVarIntString();
      const errorCode = decoder.readInt16();
      decoder.readTaggedFields();
      if (name === topic && index === partition) found = { offset, errorCode };
    }
    decoder.readTaggedFields();
  }
  const groupError = decoder.readInt16();
  if (groupError !== 0) return { offset: -1n, errorCode: groupError };
  if (!found) throw new Error(`the offset fetch answered without ${topic}/${partition}`);
  return found;
}

export interface StableOffsetsOptions {
  /** Pause between asks while a transactional commit is still settling. */
  retryMs: number;
  /** How long to wait for it before giving up (the chunk is then retried as after any failure). */
  maxWaitMs: number;
  /** Called at each answer that a commit is still settling (tests and logs). */
  onUnstable?: (topic: string, partition: number) => void;
}

/**
 * A group's committed offset for one partition as it stands once every transactional offset commit
 * for it has settled. An offset committed in a Kafka transaction becomes visible to a plain offset
 * fetch a moment after the transaction ends; a new owner reading it in that moment would see the
 * older offset and send that chunk's dead letters a second time. With require_stable the broker says
 * so (UNSTABLE_OFFSET_COMMIT) instead, and the read is asked again until the offset has settled.
 */
export class StableOffsets {
  private cluster: KafkajsCluster | undefined;
  private connecting: Promise<KafkajsCluster> | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly groupId: string,
    private readonly options: StableOffsetsOptions = { retryMs: 50, maxWaitMs: 30_000 },
  ) {}

  async committed(topic: string, partition: number): Promise<bigint> {
    const cluster = await this.connected();
    const giveUpAt = Date.now() + this.options.maxWaitMs;
    let coordinator: KafkajsBroker | undefined;
    for (;;) {
      // found once, and again only when the group's coordinator moved or was loading
      coordinator ??= await cluster.findGroupCoordinator({ groupId: this.groupId });
      const answer = (await coordinator.connectionPool.send({
        request: offsetFetchRequest(this.groupId, topic, partition),
        response: { decode: async (payload: Buffer) => decodeOffsetFetch(payload, topic, partition), parse: async (decoded: PartitionOffset) => decoded },
      })) as PartitionOffset;
      if (answer.errorCode === 0) return answer.offset;
      const settling = answer.errorCode === UNSTABLE_OFFSET_COMMIT;
      if (!settling && !COORDINATOR_ERRORS.has(answer.errorCode)) throw createErrorFromCode(answer.errorCode);
      if (settling) this.options.onUnstable?.(topic, partition);
      else coordinator = undefined;
      if (Date.now() >= giveUpAt) {
        throw new Error(
          `the committed offset of ${topic}/${partition} did not settle within ${this.options.maxWaitMs} ms (${createErrorFromCode(answer.errorCode).message})`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.retryMs));
    }
  }

  /**
   * Initialises a transactional id without keeping a producer: the broker aborts the transaction its
   * previous holder has open (or first completes one it has ended) and refuses that holder from then on.
   */
  async fence(transactionalId: string): Promise<void> {
    const cluster = await this.connected();
    await createEosManager({ logger: this.kafka.logger(), cluster, transactional: true, transactionalId }).initProducerId();
  }

  private connected(): Promise<KafkajsCluster> {
    if (this.cluster) return Promise.resolve(this.cluster);
    this.connecting ??= (async () => {
      const cluster = createCluster(this.kafka);
      await cluster.connect();
      this.cluster = cluster;
      return cluster;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  async close(): Promise<void> {
    const cluster = this.cluster ?? (await this.connecting?.catch(() => undefined));
    this.cluster = undefined;
    await cluster?.disconnect().catch(() => undefined);
  }
}

/** A kafkajs cluster with the client's own brokers, TLS, SASL and logger (kafkajs keeps its factory private). */
function createCluster(kafka: Kafka): KafkajsCluster {
  const factory = Object.getOwnPropertySymbols(kafka).find((symbol) => symbol.description === 'private:Kafka:createCluster');
  const create = factory === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[factory];
  if (typeof create !== 'function') throw new Error('this kafkajs version keeps no cluster factory: the stable offset fetch needs kafkajs 2.2');
  return (create as (options: object) => KafkajsCluster)({});
}
