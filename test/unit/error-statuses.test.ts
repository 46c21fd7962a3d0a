import { describe, expect, it } from 'vitest';
import {
  type ApiError,
  BadParameter,
  Conflict,
  Forbidden,
  InvalidEndpoint,
  LqlSyntax,
  NotFound,
  NotReady,
  QueryTimeout,
  RateLimited,
  RequestTooLarge,
  SqlSyntax,
  StoreUnavailable,
  Unauthorized,
  UnknownField,
} from '../../src/errors.ts';
import { statusOf } from '../../src/http/error-handler.ts';

describe('the HTTP status of each domain error, read from its code', () => {
  it('answers each kind of error with its status', () => {
    const cases: Array<[ApiError, number]> = [
      [new BadParameter('x'), 400],
      [new BadParameter('x', 'invalid_pattern'), 400],
      [new SqlSyntax('x'), 400],
      [new LqlSyntax('x'), 400],
      [new UnknownField('m.x', 'edge_logs'), 400],
      [new InvalidEndpoint('x'), 400],
      [new Unauthorized('x'), 401],
      [new Forbidden('x'), 403],
      [new NotFound('x', 'endpoint_not_found'), 404],
      [new NotFound('x', 'version_not_found'), 404],
      [new Conflict('x', 'name_taken'), 409],
      [new Conflict('x', 'endpoint_changed'), 409],
      [new RequestTooLarge('x', 'body'), 413],
      [new RequestTooLarge('x', 'head'), 414],
      [new RateLimited('x', 1), 429],
      [new StoreUnavailable('x'), 503],
      [new NotReady('x'), 503],
      [new QueryTimeout('x'), 504],
    ];
    expect(cases.map(([error]) => [error.code, statusOf(error)])).toEqual(cases.map(([error, status]) => [error.code, status]));
  });
});
