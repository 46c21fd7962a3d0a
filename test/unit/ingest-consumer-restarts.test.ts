import {
  KafkaJSConnectionError,
  type KafkaJSError,
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSSASLAuthenticationError,
} from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ConsumerRestarts, isTransientCrash } from '../../ingest/consumer-restarts.ts';

// kafkajs's typings declare fewer constructor arguments than its classes take
type ErrorClass = new (...args: unknown[]) => Error;
const make = (errorClass: unknown, ...args: unknown[]) => new (errorClass as ErrorClass)(...args);
/** As kafkajs wraps: a retrier that ran out, or a non-retriable error with its cause. */
const outOfRetries = (cause: Error) => make(KafkaJSNumberOfRetriesExceeded, cause, { retryCount: 12, retryTime: 30_000 });
const wrapped = (cause: Error) => make(KafkaJSNonRetriableError, cause, { cause });

/** kafkajs does not export this one; it is a KafkaJSNonRetriableError with its own name. */
function groupCoordinatorNotFound(): Error {
  const error = make(KafkaJSNonRetriableError, 'Failed to find group coordinator');
  error.name = 'KafkaJSGroupCoordinatorNotFound';
  return error;
}

describe('consumer crashes the worker restarts itself', () => {
  it('restarts a crash on the group coordinator not being found (a broker away), which kafkajs leaves stopped', () => {
    const crash = groupCoordinatorNotFound();
    expect((crash as KafkaJSError).retriable).toBe(false);
    expect(isTransientCrash(crash)).toBe(true);
  });

  it('looks through wrappers to what they wrap', () => {
    const refused = make(KafkaJSConnectionError, 'Connection error: connect ECONNREFUSED 127.0.0.1:9092');
    expect(isTransientCrash(wrapped(outOfRetries(refused)))).toBe(true);
    expect(isTransientCrash(outOfRetries(groupCoordinatorNotFound()))).toBe(true);
    const loading = make(KafkaJSProtocolError, { message: 'The coordinator is loading', type: 'COORDINATOR_LOAD_IN_PROGRESS', code: 14, retriable: false });
    expect(isTransientCrash(wrapped(loading))).toBe(true);
  });

  it('leaves the worker to exit on what a restart cannot fix', () => {
    expect(isTransientCrash(make(KafkaJSSASLAuthenticationError, 'SASL PLAIN authentication failed'))).toBe(false);
    const denied = make(KafkaJSProtocolError, { message: 'Not authorized to access group', type: 'GROUP_AUTHORIZATION_FAILED', code: 30, retriable: false });
    expect(isTransientCrash(outOfRetries(denied))).toBe(false);
    expect(isTransientCrash(new TypeError("Cannot read properties of undefined (reading 'offset')"))).toBe(false);
    expect(isTransientCrash('a string thrown')).toBe(false);
  });

  it('spends a budget of restarts per window, with doubling delays, and refills it as the window slides', () => {
    let now = 0;
    const restarts = new ConsumerRestarts({ maxRestarts: 3, windowMs: 60_000, initialDelayMs: 1000, maxDelayMs: 3000 }, () => now);
    const delays = [restarts.next()];
    now = 10_000;
    delays.push(restarts.next());
    now = 20_000;
    delays.push(restarts.next());
    expect(delays).toEqual([1000, 2000, 3000]);
    now = 59_999;
    expect(restarts.next()).toBeUndefined();
    // the first restart leaves the window: two remain in it
    now = 60_000;
    expect(restarts.next()).toBe(3000);
    now = 200_000;
    expect(restarts.next()).toBe(1000);
  });
});
