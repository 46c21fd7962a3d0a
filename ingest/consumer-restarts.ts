import { backoffMs } from './bulk.ts';

/**
 * kafkajs restarts a crashed consumer only when the crash error is retriable, but some of its
 * non-retriable errors only mean a broker was away for a moment: finding the group coordinator
 * while the only broker restarts throws KafkaJSGroupCoordinatorNotFound, and the consumer then
 * stops for good. Left alone the worker would exit; these crashes are restarted in process instead,
 * within a budget, and anything else (a configuration or authorisation error) still ends the worker.
 */
const TRANSIENT_ERROR_NAMES = new Set([
  'KafkaJSGroupCoordinatorNotFound',
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSNoBrokerAvailableError',
  'KafkaJSLockTimeout',
]);

/** Protocol errors (by kafkajs type) that a broker answers while it starts or moves leadership. */
const TRANSIENT_PROTOCOL_TYPES = new Set([
  'COORDINATOR_NOT_AVAILABLE',
  'GROUP_COORDINATOR_NOT_AVAILABLE',
  'NOT_COORDINATOR',
  'NOT_COORDINATOR_FOR_GROUP',
  'COORDINATOR_LOAD_IN_PROGRESS',
  'GROUP_LOAD_IN_PROGRESS',
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
  'REQUEST_TIMED_OUT',
  'NETWORK_EXCEPTION',
]);

interface KafkaLikeError {
  name?: string;
  type?: string;
  retriable?: boolean;
  cause?: unknown;
  originalError?: unknown;
}

/**
 * True when the crash, or an error it wraps, is a broker being away rather than a fault of ours or of
 * the configuration. Wrappers (KafkaJSNumberOfRetriesExceeded) count by what they wrap.
 */
export function isTransientCrash(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    const candidate = current as KafkaLikeError;
    if (candidate.retriable === true) return true;
    if (candidate.name && TRANSIENT_ERROR_NAMES.has(candidate.name)) return true;
    if (candidate.type && TRANSIENT_PROTOCOL_TYPES.has(candidate.type)) return true;
    current = candidate.cause ?? candidate.originalError;
  }
  return false;
}

export interface RestartBudget {
  /** Restarts allowed within `windowMs`; one more ends the worker. */
  maxRestarts: number;
  windowMs: number;
  /** Delay before the first restart of a run of crashes; doubled for each further one in the window. */
  initialDelayMs: number;
  maxDelayMs: number;
}

/** About as long as the worker's broker retry budget (three minutes) before it gives up. */
export const CONSUMER_RESTART_BUDGET: RestartBudget = { maxRestarts: 10, windowMs: 300_000, initialDelayMs: 1000, maxDelayMs: 30_000 };

/** Counts restarts in a sliding window: `next()` gives the delay before the next one, or undefined once the budget is spent. */
export class ConsumerRestarts {
  private readonly times: number[] = [];

  constructor(
    private readonly budget: RestartBudget,
    private readonly now: () => number = Date.now,
  ) {}

  next(): number | undefined {
    const at = this.now();
    while (this.times.length > 0 && this.times[0]! <= at - this.budget.windowMs) this.times.shift();
    if (this.times.length >= this.budget.maxRestarts) return undefined;
    const delay = backoffMs(this.times.length, this.budget.initialDelayMs, this.budget.maxDelayMs);
    this.times.push(at);
    return delay;
  }
}
