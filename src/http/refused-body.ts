import type { IncomingMessage } from 'node:http';

/** What is left of a refused body the service still reads before it answers, at most (bytes, then time). */
const REFUSED_BODY_DRAIN_BYTES = 16 * 1024 * 1024;
const REFUSED_BODY_DRAIN_MS = 5000;

/**
 * Reads and drops the rest of a body the service refused (over HTTP_MAX_BODY_BYTES) before the 413
 * goes out. The answer closes the connection (fastify: what the client sends next is not a request),
 * and a client still writing its body when the socket closes gets a broken pipe, not the answer:
 * Node's own client lost the 413 to EPIPE in 19 of 20 two-megabyte posts. A body announced larger
 * than REFUSED_BODY_DRAIN_BYTES, one without a length, or one still arriving after
 * REFUSED_BODY_DRAIN_MS is answered at once instead.
 */
export function drainRefusedBody(raw: IncomingMessage): Promise<void> {
  const announced = Number(raw.headers['content-length']);
  if (raw.complete || raw.destroyed || !Number.isSafeInteger(announced) || announced > REFUSED_BODY_DRAIN_BYTES) return Promise.resolve();
  return new Promise((resolve) => {
    let read = 0;
    const done = () => {
      clearTimeout(timer);
      raw.off('data', onData);
      raw.off('end', done);
      raw.off('error', done);
      raw.off('close', done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > REFUSED_BODY_DRAIN_BYTES) done();
    };
    const timer = setTimeout(done, REFUSED_BODY_DRAIN_MS);
    raw.on('data', onData);
    raw.once('end', done);
    raw.once('error', done);
    raw.once('close', done);
    raw.resume();
  });
}
