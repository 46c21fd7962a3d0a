import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { symbols } from 'pino';
import type { Logger } from '../../shared/logger.ts';

/** Paths probes and scrapers call every few seconds: logged at debug, so the log shows the API's traffic. */
const OPERATIONAL_PATHS = new Set(['/health', '/ready', '/metrics']);

/**
 * fastify's per-request logging as one line per answered request instead of an "incoming" and a
 * "completed" line: method, path without the query string (it may carry long SQL), status, time.
 */
export class RequestLog extends LogController {
  /** `access` writes the line of an answered request (known fields only, so it may skip censoring); failures go to the request's own logger. */
  constructor(private readonly access: Logger) {
    super();
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const query = request.url.indexOf('?');
    const path = query === -1 ? request.url : request.url.slice(0, query);
    const status = reply.statusCode;
    const ms = Math.round(reply.elapsedTime);
    if (error) reply.log.error({ method: request.method, path, status, ms, err: error }, 'request failed');
    // the answered line built once, in the fields' order, without a spread per request
    else this.access[OPERATIONAL_PATHS.has(path) ? 'debug' : 'info']({ reqId: request.id, method: request.method, path, status, ms }, 'request answered');
  }
}

/** pino's own symbols (pino.symbols, its published way to reach a logger's parts), by name. */
const PINO = symbols as unknown as Record<string, symbol>;
const ANSWERED = 'request answered';

interface LineParts {
  /** `{"level":30` as the logger writes the info level. */
  level: string;
  time: () => string;
  stream: { write(text: string): unknown; flushSync?: unknown };
  end: string;
  /** The stream takes many lines in one write (pino.destination's does): lines are gathered per turn of the event loop. */
  gathered: boolean;
}

/**
 * The answered line of a request the cached lane sends: byte for byte what
 * `access.info({ reqId, method, path, status, ms }, 'request answered')` writes, built as one string
 * from the logger's own level, time and bindings and handed to its stream. pino's call (arguments,
 * a walk of the object with serializer and stringifier look-ups per key) was most of the line's cost
 * on a cached answer. Only for a logger that adds nothing of its own to a line (no mixin, formatter,
 * hook, serializer or stringifier, nested key, message prefix, metadata stream); any other gets the call.
 * `reqId` and `path` must hold only characters JSON writes as they are (the lane's are checked plain).
 *
 * To pino.destination's stream, the lines of one turn of the event loop go in one write: its write
 * measures the text it gathers on every call, about 1.5 us a line when called per line. A line may
 * then follow a full-path line written later in the same turn; each carries its own time.
 */
export class AnsweredLine {
  private readonly parts: LineParts | undefined;
  private pending = '';
  private readonly writePending = () => {
    const lines = this.pending;
    this.pending = '';
    if (lines !== '') this.parts!.stream.write(lines);
  };

  constructor(private readonly access: Logger) {
    this.parts = plainParts(access);
  }

  write(reqId: string, method: string, path: string, status: number, ms: number): void {
    const { parts, access } = this;
    if (parts === undefined) return access.info({ reqId, method, path, status, ms }, ANSWERED);
    if (!access.isLevelEnabled('info')) return;
    const bindings = (access as unknown as Record<symbol, string>)[PINO.chindingsSym!];
    const line = `${parts.level}${parts.time.call(access)}${bindings},"reqId":"${reqId}","method":"${method}","path":"${path}","status":${status},"ms":${ms},"msg":"${ANSWERED}"${parts.end}`;
    if (!parts.gathered) return void parts.stream.write(line);
    if (this.pending === '') setImmediate(this.writePending);
    this.pending += line;
  }

  /** Hands the gathered lines to the stream now (the server is closing). */
  flush(): void {
    if (this.parts !== undefined) this.writePending();
  }
}

function plainParts(access: Logger): LineParts | undefined {
  const at = (name: string) => (access as unknown as Record<symbol, unknown>)[PINO[name]!];
  const formatters = at('formattersSym') as { log?: unknown } | undefined;
  const hooks = at('hooksSym') as { logMethod?: unknown; streamWrite?: unknown } | undefined;
  const serializers = (at('serializersSym') ?? {}) as Record<string, unknown>;
  const stringifiers = (at('stringifiersSym') ?? {}) as Record<string | symbol, unknown>;
  const stream = at('streamSym') as (LineParts['stream'] & Record<symbol, unknown>) | undefined;
  const plain =
    at('mixinSym') === undefined &&
    formatters?.log === undefined &&
    hooks?.logMethod === undefined &&
    hooks?.streamWrite === undefined &&
    ['reqId', 'method', 'path', 'status', 'ms', 'msg'].every((key) => serializers[key] === undefined) &&
    Reflect.ownKeys(stringifiers).length === 0 &&
    !at('nestedKeySym') &&
    !at('msgPrefixSym') &&
    at('messageKeySym') === 'msg' &&
    stream !== undefined &&
    stream[PINO.needsMetadataGsym!] !== true;
  if (!plain) return undefined;
  const level = (at('lsCacheSym') as Record<number, string>)[access.levels.values.info!];
  const time = at('timeSym') as () => string;
  return level === undefined ? undefined : { level, time, stream, end: at('endSym') as string, gathered: typeof stream.flushSync === 'function' };
}
