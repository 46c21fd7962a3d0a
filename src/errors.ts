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
