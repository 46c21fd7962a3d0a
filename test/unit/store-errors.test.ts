import { errors, type Client } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import { type BadParameter, InvalidQuery, QueryTimeout, QueryTooExpensive, StoreUnavailable } from '../../src/errors.ts';
import { isShardNotStarted, partitionsWithoutEvents, search, storeError } from '../../src/executor/elasticsearch.ts';
import { keyLookUpFailure } from '../../src/auth/authenticator.ts';
import { regexpQuery } from '../../src/planner/regex-budget.ts';

function refusal(statusCode: number, body: unknown): errors.ResponseError {
  return new errors.ResponseError({ body, statusCode, headers: {}, warnings: null, meta: {} as never });
}

// as Elasticsearch 8.19 answers a search whose aggregation trips the request breaker
const requestBreaker = {
  error: {
    root_cause: [
      {
        type: 'circuit_breaking_exception',
        reason: '[request] Data too large, data for [preallocate[aggregations]] would be [6144/6kb], which is larger than the limit of [1/1b]',
        bytes_wanted: 6144,
        bytes_limit: 1,
        durability: 'TRANSIENT',
      },
    ],
    type: 'search_phase_execution_exception',
    reason: 'all shards failed',
    phase: 'query',
    grouped: true,
    failed_shards: [{ shard: 0, index: 'x', reason: { type: 'circuit_breaking_exception', reason: '[request] Data too large', durability: 'TRANSIENT' } }],
  },
  status: 429,
};

describe('store refusals', () => {
  it("a circuit breaker tripped by the query is the query's fault: query_too_expensive with the reason", () => {
    const mapped = storeError(refusal(429, requestBreaker), 1000);
    expect(mapped).toBeInstanceOf(QueryTooExpensive);
    expect((mapped as QueryTooExpensive).code).toBe('query_too_expensive');
    expect(mapped.message).toMatch(/more memory than the log store allows one request \(\[request\] Data too large, data for \[preallocate\[aggregations\]\]/);
  });

  it('the parent breaker (the whole node short of memory) stays store_unavailable', () => {
    const parent = {
      error: { type: 'circuit_breaking_exception', reason: '[parent] Data too large, real usage: [1000/1gb]', durability: 'TRANSIENT' },
      status: 429,
    };
    expect(storeError(refusal(429, parent), 1000)).toBeInstanceOf(StoreUnavailable);
  });

  it("too many buckets is the query's fault too", () => {
    const buckets = {
      error: {
        root_cause: [],
        type: 'search_phase_execution_exception',
        reason: '',
        caused_by: {
          type: 'too_many_buckets_exception',
          reason: 'Trying to create too many buckets. Must be less than or equal to: [65536]',
          max_buckets: 65536,
        },
      },
      status: 400,
    };
    const mapped = storeError(refusal(400, buckets), 1000);
    expect(mapped).toBeInstanceOf(QueryTooExpensive);
    expect(mapped.message).toMatch(/too many buckets .*65536/);
  });

  it("a query the store refuses as malformed (400) is the caller's: invalid_query with the root cause, index names left out", () => {
    // as Elasticsearch 8.19 answers a regexp on a long field
    const reason = 'Can only use regexp queries on keyword and text fields - not on [metadata.n] which is of type [long]';
    const cause = { type: 'query_shard_exception', reason, index_uuid: 'fNwuNqsARTSW4SJFJuCgJA', index: 'lp-edge_logs-2024.01.01' };
    const body = {
      error: {
        root_cause: [cause],
        type: 'search_phase_execution_exception',
        reason: 'all shards failed',
        phase: 'query',
        grouped: true,
        failed_shards: [{ shard: 0, index: cause.index, reason: cause }],
      },
      status: 400,
    };
    const mapped = storeError(refusal(400, body), 1000);
    expect(mapped).toBeInstanceOf(InvalidQuery);
    expect((mapped as InvalidQuery).code).toBe('invalid_query');
    expect(mapped.message).toBe(`the log store refused the query: ${reason}; change the query`);
    const named = {
      error: {
        root_cause: [
          {
            type: 'illegal_argument_exception',
            reason: 'field [x] of [lp-edge_logs-2024.01.01] (uuid fNwuNqsARTSW4SJFJuCgJA) is odd',
            index: 'lp-edge_logs-2024.01.01',
            index_uuid: 'fNwuNqsARTSW4SJFJuCgJA',
          },
        ],
      },
      status: 400,
    };
    expect(storeError(refusal(400, named), 1000).message).toBe(
      'the log store refused the query: field [x] of [(index)] (uuid (index)) is odd; change the query',
    );
    const parse = {
      error: { root_cause: [{ type: 'x_content_parse_exception', reason: `[1:1] ${'x'.repeat(1000)}` }], type: 'x_content_parse_exception' },
      status: 400,
    };
    expect(storeError(refusal(400, parse), 1000).message.length).toBeLessThan(400);
  });

  it("a closed index is the store's state, not the query: store_unavailable", () => {
    const closed = {
      error: {
        root_cause: [{ type: 'index_closed_exception', reason: 'closed', index: 'lp-edge_logs-2024.01.01' }],
        type: 'index_closed_exception',
        reason: 'closed',
      },
      status: 400,
    };
    expect(storeError(refusal(400, closed), 1000)).toBeInstanceOf(StoreUnavailable);
  });

  it('a pattern too complex for the store is named after where the caller wrote it', () => {
    const request = {
      query: {
        bool: {
          filter: [
            regexpQuery('url', '.*abc.*', { parameter: 'project', pattern: 'abc' }),
            regexpQuery('path', '.*a.{12}b.*', { parameter: 'lql', pattern: 'a.{12}b' }),
          ],
        },
      },
    };
    const reason = 'Determinizing .*a.{12}b.* would require more than 10000 effort.';
    const refused = {
      error: {
        root_cause: [{ type: 'query_shard_exception', reason: `failed to create query: ${reason}` }],
        type: 'search_phase_execution_exception',
        caused_by: { type: 'too_complex_to_determinize_exception', reason },
      },
      status: 400,
    };
    const mapped = storeError(refusal(400, refused), 1000, request);
    expect((mapped as BadParameter).code).toBe('pattern_too_complex');
    expect(mapped.message).toBe(
      'lql: the pattern "a.{12}b" is too complex for the log store (building its automaton takes more than 10000 steps); simplify it: fewer repeats of . or of a class, fewer alternatives',
    );
    // one too long is not quoted by the store: a lone pattern is still named
    const tooLong = {
      error: {
        type: 'search_phase_execution_exception',
        reason:
          'The length of regex [1200] used in the Regexp Query request has exceeded the allowed maximum of [1000]. This maximum can be set by changing the [index.max_regex_length] index level setting.',
      },
      status: 400,
    };
    expect(storeError(refusal(400, tooLong), 1000, { query: regexpQuery('url', 'x', { parameter: 'project', pattern: 'x' }) }).message).toMatch(
      /^project: the pattern "x" is too long or too complex/,
    );
    expect(storeError(refusal(400, tooLong), 1000, request).message).toMatch(/^a pattern of the query is too long or too complex/);
  });

  it('overload and timeouts keep their meaning', () => {
    expect(storeError(refusal(429, { error: { type: 'es_rejected_execution_exception', reason: 'queue full' } }), 1000)).toBeInstanceOf(StoreUnavailable);
    expect(storeError(new errors.TimeoutError('slow'), 1000)).toBeInstanceOf(QueryTimeout);
  });
});

describe('key look-up failures', () => {
  it('the store unreachable, too slow or refusing for its own state is 503, never a 401 or a 500', () => {
    for (const failure of [
      new errors.ConnectionError('connect ECONNREFUSED 127.0.0.1:9200'),
      new errors.TimeoutError('Request timed out'),
      refusal(503, { error: { type: 'no_shard_available_action_exception', reason: 'No shard available for [get [keys][id]]' }, status: 503 }),
      refusal(429, { error: { type: 'es_rejected_execution_exception' }, status: 429 }),
    ]) {
      const mapped = keyLookUpFailure(failure);
      expect(mapped).toBeInstanceOf(StoreUnavailable);
      expect(mapped.message).toMatch(/^cannot verify the API key: Elasticsearch/);
    }
  });

  it('anything else is passed on as it is (a bug to see, not a store state to hide)', () => {
    const refused = refusal(400, { error: { type: 'action_request_validation_exception' }, status: 400 });
    expect(keyLookUpFailure(refused)).toBe(refused);
  });
});

describe('partitionsWithoutEvents', () => {
  const now = Date.UTC(2024, 5, 15, 23, 50);
  const day = (text: string) => `lp-edge_logs-${text}`;

  it('leaves out partitions whose primary has never started, whatever kept it (creation, a reopening, a failed allocation)', () => {
    expect(
      partitionsWithoutEvents(
        [
          { index: day('2024.06.15'), neverStarted: true },
          { index: 'lp-edge_logs', neverStarted: true },
        ],
        now,
      ),
    ).toEqual({ leaveOut: [day('2024.06.15'), 'lp-edge_logs'], waitFor: [] });
  });

  it('leaves out partitions whose period has not begun, even once started (made ahead, a node restarting); waits for the others', () => {
    const unstarted = [
      { index: day('2024.06.16'), neverStarted: false },
      { index: `${day('2024.06.15')}.23`, neverStarted: false },
      { index: `${day('2024.06.16')}.00`, neverStarted: false },
      { index: `${day('2024.06.17')}w`, neverStarted: false },
      { index: `${day('2024.06.18')}w`, neverStarted: false },
      { index: 'lp-edge_logs', neverStarted: false },
    ];
    // 2024.06.18 is a Tuesday: not a weekly partition's name, so waited for like the legacy index
    expect(partitionsWithoutEvents(unstarted, now)).toEqual({
      leaveOut: [day('2024.06.16'), `${day('2024.06.16')}.00`, `${day('2024.06.17')}w`],
      waitFor: [`${day('2024.06.15')}.23`, `${day('2024.06.18')}w`, 'lp-edge_logs'],
    });
  });

  it('an index with several primaries is left out only when none of them has ever started', () => {
    const index = day('2024.06.10');
    expect(
      partitionsWithoutEvents(
        [
          { index, neverStarted: true },
          { index, neverStarted: false },
        ],
        now,
      ),
    ).toEqual({ leaveOut: [], waitFor: [index] });
    expect(partitionsWithoutEvents([], now)).toEqual({ leaveOut: [], waitFor: [] });
  });
});

describe('isShardNotStarted', () => {
  it('knows a search refused for missing shards and field_caps refused by a shard still recovering', () => {
    expect(
      isShardNotStarted(refusal(503, { error: { type: 'search_phase_execution_exception', root_cause: [{ type: 'no_shard_available_action_exception' }] } })),
    ).toBe(true);
    expect(
      isShardNotStarted(
        refusal(503, { error: { type: 'search_phase_execution_exception', caused_by: { reason: 'Search rejected due to missing shards [[i][0]].' } } }),
      ),
    ).toBe(true);
    // as Elasticsearch 8.19 answers field_caps while a new index's shard recovers
    expect(
      isShardNotStarted(
        refusal(404, {
          error: {
            root_cause: [
              {
                type: 'illegal_index_shard_state_exception',
                reason: 'CurrentState[RECOVERING] operations only allowed when shard state is one of [POST_RECOVERY, STARTED]',
              },
            ],
            type: 'illegal_index_shard_state_exception',
          },
          status: 404,
        }),
      ),
    ).toBe(true);
    expect(isShardNotStarted(refusal(404, { error: { type: 'index_not_found_exception' } }))).toBe(false);
    expect(isShardNotStarted(refusal(503, { error: { type: 'cluster_block_exception' } }))).toBe(false);
  });
});

describe("a request's deadline", () => {
  it('a search asked after the request ran out of time is 504 query_timeout, and the store is never asked', async () => {
    let asked = 0;
    const store = { search: async () => void (asked += 1) } as unknown as Client;
    const late = search({ index: 'x', query: { match_all: {} } }, { elasticsearch: store, timeoutMs: 30_000, deadline: performance.now() - 1 });
    await expect(late).rejects.toBeInstanceOf(QueryTimeout);
    await expect(late).rejects.toThrow(/time limit \(QUERY_TIMEOUT_MS, 30000 ms\)/);
    expect(asked).toBe(0);
  });
});
