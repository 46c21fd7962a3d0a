/**
 * Every failure a caller can see, as domain errors: what went wrong and a stable code, no HTTP.
 * src/http/error-handler.ts is the only place these become responses (it owns the status codes).
 */
export abstract class ApiError extends Error {
  abstract readonly code: ErrorCode;
}

/** Every code a caller can see in `{"error": {"code", "message"}}`, and what it means; docs/errors.md is generated from it. */
export const ERROR_CODES = {
  bad_parameter: 'a parameter is missing or invalid (the message names it and the allowed values), or a timestamp is unparseable',
  invalid_pattern: 'a `project` pattern that is not a valid regular expression',
  unsupported_pattern: 'a `project` pattern using a construct that cannot be evaluated exactly',
  pattern_too_complex: 'a `project` pattern too large or costly for the store to evaluate',
  sql_syntax: 'the sandboxed `sql` does not parse (line and column given)',
  sandbox_violation: 'the sandboxed `sql` uses a statement, function or construct the sandbox does not allow',
  unknown_table: 'the sandboxed `sql` reads a table that is neither a CTE of the endpoint nor one of its own',
  invalid_query: 'the query is allowed but cannot be evaluated: an unknown column, an ambiguous name, a wrong argument type',
  unknown_field: 'an `lql` query names a field no stored event of its source has',
  query_too_broad: 'the query would pull more events out of the store than the sandbox allows (SANDBOX_MAX_SCAN_EVENTS)',
  query_too_expensive: 'the query needs more than the store or the engine allows one request (the reason and the variable are in the message)',
  lql_syntax: 'the `lql` text does not parse (where, and what was expected there)',
  invalid_cursor:
    "an export cursor that is not a previous page's X-Next-Cursor unchanged, or sent with other parameters, another endpoint " +
    "or another key's projects, or to an export that is not paged",
  invalid_endpoint: 'a saved endpoint sent to the management API cannot be stored as it is (what is wrong, and where in its SQL)',
  bad_request:
    'the request cannot be read: a body that is not a JSON object, a bad header value, a bad percent-escape in the path, ' +
    'malformed HTTP, or a body of another content type than application/json',
  unauthorized: 'no key, an unknown or revoked key, or an Authorization scheme other than Bearer',
  forbidden: 'the key may not do this: an endpoint or project outside its scope, or management without an operator key',
  endpoint_not_found: 'no endpoint with that UUID or name',
  version_not_found: 'the endpoint has no such version to restore',
  route_not_found: 'no route for this method and path',
  name_taken: 'another endpoint has this name',
  endpoint_changed: 'the endpoint was saved by someone else meanwhile; read it again and repeat the change',
  too_many_endpoints: 'the store holds as many endpoints as it serves; delete one first',
  request_timeout: 'the headers or the whole request were not received within HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS',
  request_too_large:
    'a body over HTTP_MAX_BODY_BYTES (413, answered once the rest of the body, up to 16 MiB and 5 s, is read, so the client sees it), or a request line and headers over HTTP_MAX_HEADER_BYTES or a path segment ' +
    "over the router's limit (414)",
  rate_limited:
    'the key spent its rate limit or its export budget, the address failed authentication too often, or the key has its share of ' +
    'engine queries; ' +
    'Retry-After gives the seconds to wait',
  store_unavailable:
    'Elasticsearch or the query engine cannot answer now (unreachable, overloaded, a shard not started, the engine queue ' + 'full); Retry-After when known',
  not_ready: 'the service runs but cannot answer queries yet (source indices not created)',
  query_timeout: 'the query ran longer than QUERY_TIMEOUT_MS',
  internal_error: 'a bug: the message gives the request id to look up in the service log (also in x-request-id)',
} as const satisfies Record<string, string>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** A parameter or the query text is wrong (400). Subclasses below narrow the code. */
export class BadParameter extends ApiError {
  readonly code: ErrorCode;
  constructor(message: string, code: ErrorCode = 'bad_parameter') {
    super(message);
    this.code = code;
  }
}

/** No key, or one that is unknown or revoked (401). */
export class Unauthorized extends ApiError {
  readonly code = 'unauthorized';
}

/** The key exists but may not do this (403). */
export class Forbidden extends ApiError {
  readonly code = 'forbidden';
}

/** No such endpoint, version or route (404); the code says which. */
export class NotFound extends ApiError {
  readonly code: ErrorCode;
  constructor(message: string, code: ErrorCode) {
    super(message);
    this.code = code;
  }
}

/** The body (413) or the request line and headers (414) are larger than the service accepts. */
export class RequestTooLarge extends ApiError {
  readonly code = 'request_too_large';
  constructor(
    message: string,
    readonly part: 'body' | 'head' = 'body',
  ) {
    super(message);
  }
}

/** A saved endpoint an operator sent cannot be stored as it is (400): what is wrong, and where when it is in the SQL. */
export class InvalidEndpoint extends BadParameter {
  constructor(message: string, code: ErrorCode = 'invalid_endpoint') {
    super(message, code);
  }
}

/** The change clashes with the stored endpoints (409): a name another endpoint has, or a save racing another; the code says which. */
export class Conflict extends ApiError {
  readonly code: ErrorCode;
  constructor(message: string, code: ErrorCode) {
    super(message);
    this.code = code;
  }
}

/** Too many requests for this key (429). */
export class RateLimited extends ApiError {
  readonly code = 'rate_limited';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** The log store or the query engine cannot answer now (503); when known, how long until it likely can. */
export class StoreUnavailable extends ApiError {
  readonly code = 'store_unavailable';
  constructor(
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** The query ran out of time (504). */
export class QueryTimeout extends ApiError {
  readonly code = 'query_timeout';
}

/** The service runs but cannot answer queries yet, e.g. source indices not created (503). */
export class NotReady extends ApiError {
  readonly code = 'not_ready';
}

/** Where in the query text something is, 1-based, when the parser or validator knows it. */
export interface QueryPosition {
  line: number;
  column: number;
}

function at(message: string, position?: QueryPosition): string {
  return position ? `${message} (line ${position.line}, column ${position.column})` : message;
}

/** The sandboxed SQL does not parse. */
export class SqlSyntax extends BadParameter {
  constructor(
    message: string,
    readonly position?: QueryPosition,
  ) {
    super(at(message, position), 'sql_syntax');
  }
}

/** The sandboxed query parses but uses something the sandbox does not allow (statement kind, function, construct, size). */
export class SandboxViolation extends BadParameter {
  constructor(
    message: string,
    readonly position?: QueryPosition,
  ) {
    super(at(message, position), 'sandbox_violation');
  }
}

/** The sandboxed query reads a table that is neither a CTE of the endpoint nor one of its own. */
export class UnknownTable extends BadParameter {
  constructor(
    table: string,
    allowed: readonly string[],
    readonly position?: QueryPosition,
  ) {
    super(at(`unknown table ${JSON.stringify(table)}; this endpoint's tables are: ${allowed.join(', ')}`, position), 'unknown_table');
  }
}

/** The query is well-formed and allowed but cannot be evaluated (unknown column, ambiguous name, wrong argument type). */
export class InvalidQuery extends BadParameter {
  constructor(
    message: string,
    readonly position?: QueryPosition,
  ) {
    super(at(message, position), 'invalid_query');
  }
}

/** The query names a field no stored event of its source has (an LQL path outside the source's schema). */
export class UnknownField extends BadParameter {
  constructor(
    readonly path: string,
    readonly source: string,
  ) {
    super(`${path} is not a field of ${source}: no stored event has it (a field becomes known when the first event carrying it is stored)`, 'unknown_field');
  }
}

/** The query would pull more events out of the store than the sandbox allows. */
export class QueryTooBroad extends BadParameter {
  constructor(message: string) {
    super(message, 'query_too_broad');
  }
}

/** The query is too costly to run: the store's or the engine's limits refused it. */
export class QueryTooExpensive extends BadParameter {
  constructor(
    message: string,
    readonly position?: QueryPosition,
  ) {
    super(at(message, position), 'query_too_expensive');
  }
}

/** The LQL text does not parse: where, and what was expected there. */
export class LqlSyntax extends BadParameter {
  constructor(
    message: string,
    /** 1-based offset in the LQL text. */
    readonly offset?: number,
  ) {
    super(offset === undefined ? message : `${message} (at character ${offset})`, 'lql_syntax');
  }
}
