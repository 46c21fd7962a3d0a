import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { BadParameter } from '../errors.ts';

/**
 * Where the next page of a paged export starts: after the event with these sort values (timestamp
 * text with nanoseconds, then id), within the window fixed when page 1 was asked for.
 */
export interface CursorPosition {
  /** Page 1's time (epoch ms): every page reads events up to it and plans its look-back from it. */
  windowEnd: number;
  after: [string, string];
}

interface CursorPayload {
  /** The endpoint's id. */
  e: string;
  w: number;
  a: [string, string];
}

/**
 * Opaque, tamper-checked cursors: base64url of the position and the endpoint's id, then an HMAC
 * over it and the request's scope (endpoint version, parameters, redaction, the key's projects), so
 * a cursor altered, or used with other parameters or another endpoint, is refused.
 */
export class CursorSigner {
  private readonly secret: Buffer;

  constructor(secret: string | undefined) {
    // without a configured secret, cursors are good on this process only
    this.secret = secret === undefined ? randomBytes(32) : Buffer.from(secret, 'utf8');
  }

  encode(endpointId: string, scope: string, position: CursorPosition): string {
    const payload: CursorPayload = { e: endpointId, w: position.windowEnd, a: position.after };
    const text = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${text}.${this.signature(text, scope).toString('base64url')}`;
  }

  /** The position a cursor holds; a cursor not made by encode for this endpoint and scope is a 400. */
  decode(cursor: string, endpointId: string, scope: string): CursorPosition {
    const [text, signature, ...rest] = cursor.split('.');
    const payload = text && signature !== undefined && rest.length === 0 ? payloadOf(text) : undefined;
    if (!payload) throw invalid('it is not a cursor this service made (send the X-Next-Cursor header of the previous page unchanged)');
    if (payload.e !== endpointId) throw invalid('it belongs to another endpoint');
    const expected = this.signature(text!, scope);
    const given = Buffer.from(signature!, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      const differences = "the parameters, the redaction header or the API key differ from the first page's (or the endpoint was changed since)";
      throw invalid(`it was altered, or ${differences}`);
    }
    return { windowEnd: payload.w, after: payload.a };
  }

  private signature(text: string, scope: string): Buffer {
    return createHmac('sha256', this.secret).update(text).update('\n').update(scope).digest();
  }
}

function payloadOf(text: string): CursorPayload | undefined {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<CursorPayload> | null;
    if (typeof value !== 'object' || value === null || typeof value.e !== 'string' || !Number.isSafeInteger(value.w)) return undefined;
    const after = value.a;
    if (!Array.isArray(after) || after.length !== 2 || !after.every((part) => typeof part === 'string')) return undefined;
    return value as CursorPayload;
  } catch {
    return undefined;
  }
}

function invalid(reason: string): BadParameter {
  return new BadParameter(`cursor is not valid here: ${reason}`, 'invalid_cursor');
}
