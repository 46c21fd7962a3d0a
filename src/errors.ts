/**
 * Every failure a caller can see, as domain errors: what went wrong and a stable code, no HTTP.
 * src/http/error-handler.ts is the only place these become responses (it owns the status codes).
 */
export abstract class ApiError extends Error {
  abstract readonly code: string;
}

/** A parameter or the query text is wrong (400). Subclasses below narrow the code. */
export class BadParameter extends ApiError {
  readonly code: string;
  constructor(message: string, code = 'bad_parameter') {
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

/** No such endpoint or route (404). */
export class NotFound extends ApiError {
  readonly code: string;
  constructor(message: string, code = 'not_found') {
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
  constructor(message: string, code = 'invalid_endpoint') {
    super(message, code);
  }
}

/** The change clashes with the stored endpoints (409): a name another endpoint has, or a save racing another. */
export class Conflict extends ApiError {
  readonly code: string;
  constructor(message: string, code = 'conflict') {
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
  constructor(message: string, readonly position?: QueryPosition) {
    super(at(message, position), 'sql_syntax');
  }
}

/** The sandboxed query parses but uses something the sandbox does not allow (statement kind, function, construct, size). */
export class SandboxViolation extends BadParameter {
  constructor(message: string, readonly position?: QueryPosition) {
    super(at(message, position), 'sandbox_violation');
  }
}

/** The sandboxed query reads a table that is neither a CTE of the endpoint nor one of its own. */
export class UnknownTable extends BadParameter {
  constructor(table: string, allowed: readonly string[], readonly position?: QueryPosition) {
    super(at(`unknown table ${JSON.stringify(table)}; this endpoint's tables are: ${allowed.join(', ')}`, position), 'unknown_table');
  }
}

/** The query is well-formed and allowed but cannot be evaluated (unknown column, ambiguous name, wrong argument type). */
export class InvalidQuery extends BadParameter {
  constructor(message: string, readonly position?: QueryPosition) {
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
  constructor(message: string, readonly position?: QueryPosition) {
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
