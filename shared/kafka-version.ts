import { connect } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';

export interface ApiVersionRange {
  apiKey: number;
  min: number;
  max: number;
}

/**
 * Kafka brokers do not report their release over the protocol; the set of API keys they answer
 * ApiVersions with does tell it apart. Each entry: the first release that serves that key.
 */
const RELEASE_MARKERS: Array<{ release: string; test: (apis: ApiVersionRange[]) => boolean }> = [
  // 4.0 dropped Produce v0-v2
  { release: '4.x', test: (apis) => (apis.find((api) => api.apiKey === 0)?.min ?? 0) >= 3 },
  { release: '3.9', test: (apis) => apis.some((api) => api.apiKey === 80) }, // AddRaftVoter
  { release: '3.8', test: (apis) => apis.some((api) => api.apiKey === 75) }, // DescribeTopicPartitions
  { release: '3.7', test: (apis) => apis.some((api) => api.apiKey === 74) }, // ListClientMetricsResources
  { release: '3.5', test: (apis) => apis.some((api) => api.apiKey === 68) }, // ConsumerGroupHeartbeat
];

export function kafkaReleaseFromApis(apis: ApiVersionRange[]): string {
  return RELEASE_MARKERS.find((marker) => marker.test(apis))?.release ?? 'older than 3.5';
}

export function encodeApiVersionsRequest(correlationId: number, clientId: string): Buffer {
  const client = Buffer.from(clientId, 'utf8');
  const body = Buffer.alloc(2 + 2 + 4 + 2 + client.length);
  body.writeInt16BE(18, 0); // ApiVersions
  body.writeInt16BE(0, 2); // version 0: every broker answers it
  body.writeInt32BE(correlationId, 4);
  body.writeInt16BE(client.length, 8);
  client.copy(body, 10);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length, 0);
  return Buffer.concat([size, body]);
}

export function decodeApiVersionsResponse(frame: Buffer): ApiVersionRange[] {
  // frame excludes the size prefix: correlation id, error code, array of (key, min, max)
  const errorCode = frame.readInt16BE(4);
  if (errorCode !== 0) throw new Error(`ApiVersions failed with error code ${errorCode}`);
  const count = frame.readInt32BE(6);
  const apis: ApiVersionRange[] = [];
  for (let index = 0; index < count; index += 1) {
    const offset = 10 + index * 6;
    apis.push({ apiKey: frame.readInt16BE(offset), min: frame.readInt16BE(offset + 2), max: frame.readInt16BE(offset + 4) });
  }
  return apis;
}

/** Asks one broker which API versions it serves (over TLS when given TLS options: brokers answer this before SASL). */
export function fetchApiVersions(broker: string, timeoutMs = 3000, tls?: ConnectionOptions): Promise<ApiVersionRange[]> {
  const [host, port] = broker.split(':');
  return new Promise((resolve, reject) => {
    const address = { host: host ?? '127.0.0.1', port: Number(port) };
    const socket = tls ? connectTls({ ...tls, ...address }) : connect(address);
    let received = Buffer.alloc(0);
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      reject(new Error(`kafka broker ${broker} did not answer within ${timeoutMs} ms`));
    });
    socket.on('error', reject);
    socket.on(tls ? 'secureConnect' : 'connect', () => socket.write(encodeApiVersionsRequest(1, 'logplatform-health')));
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 4) return;
      const size = received.readInt32BE(0);
      if (received.length < 4 + size) return;
      socket.end();
      try {
        resolve(decodeApiVersionsResponse(received.subarray(4, 4 + size)));
      } catch (error) {
        reject(error);
      }
    });
  });
}
