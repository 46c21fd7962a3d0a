/**
 * Entry of the worker thread that parses sandboxed SQL off the event loop (see parser-pool.ts):
 * the whole front end (size checks, sqlparser-rs in WebAssembly, conversion, validation) runs
 * here, and the validated tree or the refusal goes back as a message.
 */
import { parentPort } from 'node:worker_threads';
import { ApiError, type QueryPosition } from '../errors.ts';
import { initSqlParser, parseSandboxQuery, type SandboxQueryOptions } from './index.ts';
import type { Query } from './syntax.ts';

export interface ParseRequest {
  id: number;
  text: string;
  options: SandboxQueryOptions;
}

/** A refusal as data: which domain error, its code, message and position. */
export interface ParseRefusal {
  errorClass: string;
  code: string;
  message: string;
  position?: QueryPosition;
}

export type ParseReply = { id: number; query: Query } | { id: number; refusal: ParseRefusal } | { id: number; failure: string };

const port = parentPort!;
await initSqlParser();
port.on('message', (request: ParseRequest) => {
  let reply: ParseReply;
  try {
    reply = { id: request.id, query: parseSandboxQuery(request.text, request.options) };
  } catch (error) {
    reply =
      error instanceof ApiError
        ? {
            id: request.id,
            refusal: {
              errorClass: error.constructor.name,
              code: error.code,
              message: error.message,
              position: (error as { position?: QueryPosition }).position,
            },
          }
        : { id: request.id, failure: error instanceof Error ? (error.stack ?? error.message) : String(error) };
  }
  port.postMessage(reply);
});
port.postMessage({ ready: true });
