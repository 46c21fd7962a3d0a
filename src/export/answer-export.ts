import { Readable } from 'node:stream';
import type { Logger } from '../../shared/logger.ts';
import { answerEndpointQuery, type AnswerDependencies, type EndpointRequest } from '../endpoints/answer.ts';
import { assertEndpointAllowed, cacheKey, redactionRequested, sandboxRequest, validateParameters } from '../endpoints/request.ts';
import { ApiError, BadParameter, RateLimited } from '../errors.ts';
import { elasticsearchQuerySeconds } from '../metrics.ts';
import { planEndpointQuery } from '../planner/index.ts';
import { redactPii, redactText } from '../redaction.ts';
import type { CursorSigner } from './cursor.ts';
import { EventPages, type SortKey } from './event-pages.ts';
import { withoutExportParameters, type ExportRequest } from './export-request.ts';
import type { RowBudget } from './row-budget.ts';
import { columnsOf, CONTENT_TYPES, rowEncoder } from './row-encoding.ts';

export interface ExportDependencies {
  budget: RowBudget;
  cursors: CursorSigner;
  logger: Logger;
}

/** Told the rows an export sent, and a streamed page's bytes, once its stream ends (for the usage metrics). */
export type RowsSent = (rows: number, streamedBytes?: number) => void;

/** An export's response: its headers, known before the first row, and its body. */
export interface ExportAnswer {
  headers: Record<string, string>;
  body: Buffer | Readable;
}

/** The header holding the cursor of the next page; absent on the last page and on exports that are not paged. */
export const NEXT_CURSOR_HEADER = 'x-next-cursor';

/**
 * An export in NDJSON or CSV. An endpoint answering with its saved raw-event selection (logs.all)
 * is paged: each response streams up to page_size events newest first, and X-Next-Cursor names the
 * next page. Every other answer (aggregations, sandboxed SQL or LQL) is the JSON answer's rows
 * (at most the endpoint's row cap) in the chosen format, without a cursor.
 */
export async function answerExport(
  request: EndpointRequest,
  asked: ExportRequest,
  dependencies: AnswerDependencies,
  exporting: ExportDependencies,
  rowsSent: RowsSent = () => {},
): Promise<ExportAnswer> {
  const supplied = withoutExportParameters(request.supplied);
  const paged = request.endpoint.selection.kind === 'events' && (!request.endpoint.sandboxable || sandboxRequest(supplied) === undefined);
  if (paged) return eventPage({ ...request, supplied }, asked, dependencies, exporting, rowsSent);
  if (asked.cursor !== undefined) {
    const why = `endpoint ${request.endpoint.name} answers this request with at most ${request.endpoint.maxRows} rows in one response`;
    throw new BadParameter(`cursor does not apply: ${why}; only raw-event exports (the saved selection of logs.all) are paged`, 'invalid_cursor');
  }
  // the answer's size is known only once it is computed: one row is reserved, and the rest are owed
  spend(exporting.budget, 1, request.principal.keyId);
  let rows: Record<string, unknown>[] = [];
  let answer: Awaited<ReturnType<typeof answerEndpointQuery>>;
  try {
    answer = await answerEndpointQuery({ ...request, supplied }, dependencies);
    // the JSON answer's rows (redacted, cached) as they are: the export shows exactly what JSON would
    rows = (JSON.parse(answer.body.toString('utf8')) as { result: Record<string, unknown>[] }).result;
  } finally {
    exporting.budget.settle(request.principal.keyId, 1, rows.length);
  }
  rowsSent(rows.length);
  const encoder = rowEncoder(asked.format, columnsOf(rows));
  return {
    headers: { 'content-type': CONTENT_TYPES[asked.format], 'x-cache': answer.cache, age: String(answer.ageSeconds) },
    body: Buffer.from(encoder.head() + encoder.rows(rows)),
  };
}

/** At least one row of the key's budget, reserved; none left is a 429 saying when there will be. */
function spend(budget: RowBudget, wanted: number, keyId: string): number {
  const decision = budget.reserve(keyId, wanted);
  if (decision.kind === 'granted') return decision.rows;
  const wait = decision.retryAfterSeconds;
  throw new RateLimited(`export budget spent for this API key: ${budget.perMinute} rows per minute; retry in ${wait} s`, wait);
}

/**
 * One page of a raw-event export. Before any byte is sent: scope and parameter checks, the cursor,
 * the budget (the page is cut to the rows it holds), and the page's last event, read as sort values
 * only, so the next cursor goes in a header and the body is rows alone. Then the rows stream one
 * chunk at a time, each asked of the store only once the socket has taken the previous one.
 */
async function eventPage(
  request: EndpointRequest,
  asked: ExportRequest,
  dependencies: AnswerDependencies,
  exporting: ExportDependencies,
  rowsSent: RowsSent,
): Promise<ExportAnswer> {
  const { endpoint, principal } = request;
  assertEndpointAllowed(principal, endpoint);
  const redact = redactionRequested(request.redactHeaders, endpoint);
  try {
    const parameters = validateParameters(endpoint, request.supplied);
    const scope = cacheKey(endpoint, parameters, redact, principal);
    const position = asked.cursor === undefined ? undefined : exporting.cursors.decode(asked.cursor, endpoint.id, scope);
    const windowEnd = position?.windowEnd ?? dependencies.clock.now();
    const plan = request.timing.measure('plan', () =>
      planEndpointQuery(endpoint, parameters, {
        now: windowEnd,
        projects: principal.projects,
        indexPrefix: dependencies.indexPrefix,
        partitionPeriods: dependencies.partitionPeriods,
        regexLimits: dependencies.regexLimits,
      }),
    );
    const scan = plan.scans[0];
    if (scan?.kind !== 'events') throw new Error(`endpoint ${endpoint.name}: its saved raw-event selection planned no event scan`);
    const pages = new EventPages(scan, windowEnd, {
      elasticsearch: dependencies.elasticsearch,
      timeoutMs: dependencies.queryTimeoutMs,
      observe: (seconds) => elasticsearchQuerySeconds.observe({ endpoint: endpoint.name }, seconds),
    });
    const granted = spend(exporting.budget, asked.pageSize, principal.keyId);
    let last: SortKey | undefined;
    let more = false;
    try {
      last = await request.timing.measureAsync('store', () => pages.keyAfter(position?.after, granted));
      more = last !== undefined && (await pages.keyAfter(last, 1)) !== undefined;
    } catch (error) {
      exporting.budget.settle(principal.keyId, granted, 0);
      throw error;
    }
    const headers: Record<string, string> = { 'content-type': CONTENT_TYPES[asked.format], 'x-cache': 'BYPASS', age: '0' };
    if (more && last) headers[NEXT_CURSOR_HEADER] = exporting.cursors.encode(endpoint.id, scope, { windowEnd, after: last });
    const encoder = rowEncoder(
      asked.format,
      scan.columns.map((column) => column.name),
    );
    const log = exporting.logger.child({ endpoint: endpoint.name, keyId: principal.keyId });
    const settle = (sent: number, bytes: number) => {
      exporting.budget.settle(principal.keyId, granted, sent);
      rowsSent(sent, bytes);
    };
    const text = pageText(pages.rows(position?.after, more ? last : undefined), encoder, redact, settle, log);
    const body = Readable.from(text, { objectMode: false });
    return { headers, body };
  } catch (error) {
    // messages may quote the caller's values: redacted like rows, as for JSON answers
    if (redact && error instanceof ApiError) error.message = redactText(error.message);
    throw error;
  }
}

/** The page's text, chunk by chunk; the rows and bytes handed on are settled however the stream ends. */
async function* pageText(
  chunks: AsyncGenerator<Record<string, unknown>[]>,
  encoder: ReturnType<typeof rowEncoder>,
  redact: boolean,
  settle: (sent: number, bytes: number) => void,
  log: Logger,
): AsyncGenerator<Buffer> {
  let sent = 0;
  let bytes = 0;
  try {
    const head = encoder.head();
    if (head !== '') {
      bytes += Buffer.byteLength(head);
      yield Buffer.from(head);
    }
    for await (const rows of chunks) {
      const text = Buffer.from(encoder.rows(redact ? rows.map((row) => redactPii(row)) : rows));
      sent += rows.length;
      bytes += text.length;
      yield text;
    }
  } catch (error) {
    // the status and headers are sent: the connection is cut, so the caller sees a broken page, never a short one
    log.warn({ err: error, rowsSent: sent }, 'export failed mid-page');
    throw error;
  } finally {
    settle(sent, bytes);
  }
}
