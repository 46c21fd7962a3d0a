import { describe, expect, it } from 'vitest';
import { decodeApiVersionsResponse, encodeApiVersionsRequest, kafkaReleaseFromApis } from '../../shared/kafka-version.ts';

function responseFrame(apis: Array<[number, number, number]>, errorCode = 0): Buffer {
  const frame = Buffer.alloc(10 + apis.length * 6);
  frame.writeInt32BE(7, 0);
  frame.writeInt16BE(errorCode, 4);
  frame.writeInt32BE(apis.length, 6);
  apis.forEach(([key, min, max], index) => {
    frame.writeInt16BE(key, 10 + index * 6);
    frame.writeInt16BE(min, 12 + index * 6);
    frame.writeInt16BE(max, 14 + index * 6);
  });
  return frame;
}

describe('kafka release detection', () => {
  it('encodes an ApiVersions v0 request with its size prefix', () => {
    const request = encodeApiVersionsRequest(42, 'ab');
    expect(request.readInt32BE(0)).toBe(request.length - 4);
    expect(request.readInt16BE(4)).toBe(18);
    expect(request.readInt32BE(8)).toBe(42);
    expect(request.subarray(14).toString()).toBe('ab');
  });

  it('decodes the API ranges and names the release by its newest API', () => {
    const apis = decodeApiVersionsResponse(
      responseFrame([
        [0, 0, 11],
        [75, 0, 0],
        [80, 0, 0],
      ]),
    );
    expect(apis).toContainEqual({ apiKey: 80, min: 0, max: 0 });
    expect(kafkaReleaseFromApis(apis)).toBe('3.9');
    expect(kafkaReleaseFromApis(apis.filter((api) => api.apiKey !== 80))).toBe('3.8');
    expect(kafkaReleaseFromApis([{ apiKey: 0, min: 3, max: 12 }])).toBe('4.x');
  });

  it('rejects an error response', () => {
    expect(() => decodeApiVersionsResponse(responseFrame([], 35))).toThrow(/error code 35/);
  });
});
