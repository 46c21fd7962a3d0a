import type { Client } from '@elastic/elasticsearch';
import type { Endpoint } from '../../queries/index.ts';
import type { Principal } from '../auth/principal.ts';
import type { ResultCache } from '../cache/result-cache.ts';
import { executePlan } from '../executor/index.ts';
import { elasticsearchQuerySeconds } from '../metrics.ts';
import { planEndpointQuery, type Plan } from '../planner/index.ts';
import { redactPii } from '../redaction.ts';
import { assertEndpointAllowed, assertNoSandboxQuery, cacheKey, redactionRequested, validateParameters } from './request.ts';

export interface AnswerDependencies {
  elasticsearch: Client;
  indexPrefix: string;
  queryTimeoutMs: number;
  /** Current time in epoch milliseconds; injected so look-back windows are exact in tests. */
  clock: { now(): number };
  resultCache: ResultCache;
}

export interface EndpointRequest {
  endpoint: Endpoint;
  principal: Principal;
  /** Query-string and body parameters, merged. */
  supplied: Record<string, unknown>;
  /** The SVC-ENDPOINT-REDACT-PII header as received. */
  redactHeader: string | string[] | undefined;
}

export interface Answer {
  rows: unknown[];
  cache: 'HIT' | 'MISS' | 'BYPASS';
  ageSeconds: number;
}

/**
 * One request from key scope to rows: scope check, parameters, plan, cache, execution, redaction.
 * The plan is built before any cache look-up so bad parameters and forbidden projects fail first;
 * that plan serves the first run, and each warming run plans anew to measure its window from its own time.
 */
export async function answerEndpointQuery(request: EndpointRequest, dependencies: AnswerDependencies): Promise<Answer> {
  const { endpoint, principal } = request;
  assertEndpointAllowed(principal, endpoint);
  assertNoSandboxQuery(request.supplied);
  const parameters = validateParameters(endpoint, request.supplied);
  const redact = redactionRequested(request.redactHeader, endpoint);
  const plan = () => planEndpointQuery(endpoint, parameters, { now: dependencies.clock.now(), projects: principal.projects, indexPrefix: dependencies.indexPrefix });
  let firstPlan: Plan | undefined = plan();
  const run = async () => {
    const current = firstPlan ?? plan();
    firstPlan = undefined;
    const rows = await executePlan(current, {
      elasticsearch: dependencies.elasticsearch,
      timeoutMs: dependencies.queryTimeoutMs,
      observe: (seconds) => elasticsearchQuerySeconds.observe({ endpoint: endpoint.name }, seconds),
    });
    return redact ? redactPii(rows) : rows;
  };
  if (endpoint.cache === null) return { rows: await run(), cache: 'BYPASS', ageSeconds: 0 };
  const cached = await dependencies.resultCache.fetch({ key: cacheKey(endpoint, parameters, redact, principal), policy: endpoint.cache, run });
  return { rows: cached.rows, cache: cached.status, ageSeconds: cached.ageSeconds };
}
