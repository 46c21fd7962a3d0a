import { BadParameter } from '../errors.ts';

/** A key that would replace an object's prototype when merged; refused by name rather than as "not JSON". */
const FORBIDDEN_KEY = '__proto__';

function refuseForbiddenKey(key: string, value: unknown): unknown {
  if (key === FORBIDDEN_KEY)
    throw new BadParameter(`the JSON body holds the key "${FORBIDDEN_KEY}", which is not accepted; send the parameters as plain fields`, 'bad_request');
  return value;
}

/**
 * A request body's JSON text parsed, with errors that say what is wrong: the parser's own message
 * for text that is not JSON, the key for a `__proto__` key. The reviver (slower) runs only when
 * the text could spell that key, plainly or with \u escapes.
 */
export function parseJsonBody(text: string): unknown {
  const suspicious = text.includes(FORBIDDEN_KEY) || text.includes('\\u');
  try {
    return suspicious ? JSON.parse(text, refuseForbiddenKey) : JSON.parse(text);
  } catch (error) {
    if (error instanceof BadParameter) throw error;
    throw new BadParameter(`the body is not valid JSON: ${(error as Error).message}`, 'bad_request');
  }
}

/** The parameters object of a body; anything but a JSON object (an array, a string, null) is refused by name. */
export function parametersObject(body: unknown): Record<string, unknown> | undefined {
  if (body === undefined) return undefined;
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) return body as Record<string, unknown>;
  const kind = body === null ? 'null' : Array.isArray(body) ? 'an array' : `a ${typeof body}`;
  throw new BadParameter(`the JSON body must be an object whose fields are the parameters, e.g. {"project": "..."}; got ${kind}`, 'bad_request');
}
