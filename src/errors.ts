/**
 * Every failure a caller can see, with its HTTP status and stable code. The error handler in
 * src/http/error-handler.ts is the only place these become responses.
 */
export abstract class ApiError extends Error {
  abstract readonly status: number;
  abstract readonly code: string;
  /** Extra response headers, e.g. Retry-After. */
  readonly headers: Record<string, string> = {};
}

export class BadParameter extends ApiError {
  readonly status = 400;
  readonly code: string;
  constructor(message: string, code = 'bad_parameter') {
    super(message);
    this.code = code;
  }
}

export class Unauthorized extends ApiError {
  readonly status = 401;
  readonly code = 'unauthorized';
}

export class Forbidden extends ApiError {
  readonly status = 403;
  readonly code = 'forbidden';
}

export class NotFound extends ApiError {
  readonly status = 404;
  readonly code: string;
  constructor(message: string, code = 'not_found') {
    super(message);
    this.code = code;
  }
}

export class RequestTooLarge extends ApiError {
  readonly status: 413 | 414;
  readonly code = 'request_too_large';
  constructor(message: string, status: 413 | 414 = 413) {
    super(message);
    this.status = status;
  }
}

export class RateLimited extends ApiError {
  readonly status = 429;
  readonly code = 'rate_limited';
  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.headers['retry-after'] = String(retryAfterSeconds);
  }
}

export class StoreUnavailable extends ApiError {
  readonly status = 503;
  readonly code = 'store_unavailable';
}

export class QueryTimeout extends ApiError {
  readonly status = 504;
  readonly code = 'query_timeout';
}

/** The service runs but cannot answer queries yet (e.g. source indices not created). */
export class NotReady extends ApiError {
  readonly status = 503;
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

/** The query would pull more events out of the store than the sandbox allows. */
export class QueryTooBroad extends BadParameter {
  constructor(message: string) {
    super(message, 'query_too_broad');
  }
}

/** The query is too costly to run: the store's or the engine's limits refused it. */
export class QueryTooExpensive extends BadParameter {
  constructor(message: string) {
    super(message, 'query_too_expensive');
  }
}
