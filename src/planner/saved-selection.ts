import type { EndpointDefinition } from '../../queries/endpoint.ts';
import type { Plan } from './plan.ts';
import type { ScopeContext, ValidatedParameters } from './scope.ts';
import { eventScan, requestCountScan, requireCte } from './tables.ts';

/**
 * The plan of an endpoint's saved final selection. logs.all: one scan of the selected CTE's newest
 * events. usage.api-counts: one aggregation scan. Saved SQL is not a compiled selection.
 */
export function planSavedSelection(endpoint: EndpointDefinition, params: ValidatedParameters, context: ScopeContext): Plan {
  const selection = endpoint.selection;
  if (selection.kind === 'events') {
    const limit = Math.min(selection.limit, endpoint.maxRows);
    const from = requireCte(endpoint, selection.from);
    const scan = eventScan(from, params, context, {
      table: from.name,
      predicates: [],
      order: 'timestamp_desc',
      take: { kind: 'limit', rows: limit },
      columns: selection.columns,
    });
    return { scans: [scan], answer: { kind: 'scan', table: from.name, format: 'log_rows' }, rowCap: limit };
  }
  // saved SQL is a sandboxed query: src/endpoints/answer.ts plans it as one
  if (selection.kind === 'sql') throw new Error(`endpoint ${endpoint.name} selects with saved SQL, which is planned as a sandboxed query`);
  const cte = requireCte(endpoint, selection.from);
  if (cte.kind !== 'request_counts') throw new Error(`endpoint ${endpoint.name} selects buckets from ${selection.from}, which is not a request-counts CTE`);
  return {
    scans: [requestCountScan(endpoint, cte, params, context)],
    answer: { kind: 'scan', table: cte.name, format: 'usage_rows' },
    rowCap: endpoint.maxRows,
  };
}
