import type { z } from 'zod';
import type { EndpointDefinition } from '../../queries/endpoint.ts';
import type { Principal } from '../auth/principal.ts';
import { BadParameter, Forbidden, InvalidQuery } from '../errors.ts';

/**
 * Query-string and JSON-body values merged; the body wins, as clients send long SQL there. Values
 * keep their JSON types (so a non-string `sql` is named, not coerced); the result has no prototype,
 * so no parameter name can reach one.
 */
export function mergedParameters(query: unknown, body: unknown): Record<string, unknown> {
  const merged: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const source of [query, body]) {
    if (typeof source !== 'object' || source === null || Array.isArray(source)) continue;
    for (const [name, raw] of Object.entries(source)) {
      // a repeated query-string parameter: the last value wins
      merged[name] = Array.isArray(raw) && typeof raw[raw.length - 1] === 'string' ? raw[raw.length - 1] : raw;
    }
  }
  return merged;
}

/** The scope check: a key limited to named endpoints may call only those (by name or id). */
export function assertEndpointAllowed(principal: Principal, endpoint: EndpointDefinition): void {
  if (principal.endpoints === 'all') return;
  if (principal.endpoints.includes(endpoint.name) || principal.endpoints.includes(endpoint.id)) return;
  throw new Forbidden(`this API key may not query endpoint ${endpoint.name}; it is limited to: ${principal.endpoints.join(', ') || '(none)'}`);
}

/** An ad-hoc query sent with the request, replacing the endpoint's saved final selection. */
export interface SandboxRequest {
  language: 'sql' | 'lql';
  text: string;
}

/** The reference's answer to a blank query (status 400). */
export const EMPTY_QUERY = 'Query cannot be empty';

/**
 * The `sql` or `lql` parameter, from the query string or the JSON body; a non-empty `sql` wins.
 * Anything but a string is refused by name rather than ignored, and so is a parameter sent blank
 * with no other query beside it: it never falls back to the endpoint's saved query.
 */
export function sandboxRequest(parameters: Record<string, unknown>): SandboxRequest | undefined {
  let sent = false;
  for (const language of ['sql', 'lql'] as const) {
    const value = parameters[language];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string')
      throw new BadParameter(`${language} must be a string holding the query text; got ${Array.isArray(value) ? 'an array' : typeof value}`);
    sent = true;
  }
  for (const language of ['sql', 'lql'] as const) {
    const text = parameters[language];
    if (typeof text === 'string' && text.trim() !== '') return { language, text };
  }
  if (sent) throw new InvalidQuery(EMPTY_QUERY);
  return undefined;
}

/** The endpoint's declared parameters, validated and normalised; undeclared ones are dropped. */
export function validateParameters(endpoint: EndpointDefinition, parameters: Record<string, unknown>): Record<string, unknown> {
  // a JSON body may send a declared parameter as a number or boolean; it means the same as its text (copied only then: most requests send text)
  const texts = Object.values(parameters).some((value) => typeof value === 'number' || typeof value === 'boolean')
    ? Object.fromEntries(
        Object.entries(parameters).map(([name, value]) => [name, typeof value === 'number' || typeof value === 'boolean' ? String(value) : value]),
      )
    : parameters;
  const parsed = (endpoint.parameters as z.ZodType).safeParse(texts);
  if (parsed.success) return parsed.data as Record<string, unknown>;
  const messages = parsed.error.issues.map((issue) => {
    const name = issue.path.join('.');
    return name === '' || issue.message.startsWith(name) ? issue.message : `${name}: ${issue.message}`;
  });
  throw new BadParameter(`${endpoint.name}: ${messages.join('; ')}`);
}

/** The redaction header's names: ours, and the reference implementation's, which its clients send. */
export const REDACT_HEADERS = ['SVC-ENDPOINT-REDACT-PII', 'LF-ENDPOINT-REDACT-PII'] as const;

/** The redaction headers as received, by name (REDACT_HEADERS). */
export type RedactHeaders = Partial<Record<(typeof REDACT_HEADERS)[number], string | string[]>>;

/**
 * `SVC-ENDPOINT-REDACT-PII` or its alias `LF-ENDPOINT-REDACT-PII`: `true` or `false` (any letter case,
 * surrounding spaces ignored); both absent, the endpoint's setting holds. Anything else, a repeated
 * header included (Node joins repeats with ", "), is refused, and so are both sent with different
 * values: a caller asking for redaction must never get clear rows because of a typo.
 */
export function redactionRequested(headers: RedactHeaders, endpoint: EndpointDefinition): boolean {
  const sent = REDACT_HEADERS.flatMap((name) => {
    const header = headers[name];
    return header === undefined ? [] : [{ name, value: redactionValue(name, header) }];
  });
  const [first, ...others] = sent;
  if (!first) return endpoint.redactPii;
  if (others.some((header) => header.value !== first.value)) {
    const shown = sent.map((header) => `${header.name}: ${header.value}`).join(', ');
    throw new BadParameter(`${shown} disagree; send one of these headers, or both with the same value`, 'bad_request');
  }
  return first.value;
}

function redactionValue(name: string, header: string | string[]): boolean {
  const allowed = `${name} must be exactly true or false (letter case and surrounding spaces ignored), sent once`;
  if (Array.isArray(header)) throw new BadParameter(`${allowed}; it was sent ${header.length} times`, 'bad_request');
  const value = header.trim().toLowerCase();
  if (value === 'true') return true;
  if (value === 'false') return false;
  const shown = header.length > 40 ? `${JSON.stringify(header.slice(0, 40))}...` : JSON.stringify(header);
  throw new BadParameter(`${allowed}; got ${shown}`, 'bad_request');
}

/**
 * Everything that changes a result: the endpoint and its stored version, its normalised declared parameters (sorted), the
 * sandboxed query (language and text), redaction, and the caller's project restriction.
 */
export function cacheKey(
  endpoint: EndpointDefinition,
  parameters: Record<string, unknown>,
  redact: boolean,
  principal: Principal,
  sandbox?: SandboxRequest,
): string {
  const declared = Object.keys(parameters)
    .filter((name) => parameters[name] !== undefined)
    .sort()
    .map((name) => [name, parameters[name]]);
  const projects = principal.projects === null ? '*' : [...principal.projects].sort();
  return JSON.stringify([endpoint.id, endpoint.version ?? 0, declared, sandbox ? `${sandbox.language}:${sandbox.text}` : '', redact, projects]);
}

/** Whether a cache key is one of this endpoint's (any version): see cacheKey. */
export function isCacheKeyOf(key: string, endpointId: string): boolean {
  return key.startsWith(`[${JSON.stringify(endpointId)},`);
}
