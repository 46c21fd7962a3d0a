/** Query-string text the lane reads itself: pairs of plain or percent-encoded characters; anything else is left to the router's parser. */
const PLAIN_PAIR = /^[A-Za-z0-9._~+-]+=[A-Za-z0-9._~+%-]*$/;

/**
 * The query string of a URL as fastify's router would hand it to the route (each name's last value;
 * the query route keeps only the last), or undefined where the two parsers could differ: a pair
 * without `=`, a name with escapes, a malformed escape, a `#`. The result has no prototype, as the
 * router's has, so `__proto__` is a name like any other.
 */
export function plainQuery(text: string): Record<string, string> | undefined {
  const parameters = Object.create(null) as Record<string, string>;
  if (text === '') return parameters;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    if (!PLAIN_PAIR.test(pair)) return undefined;
    const equals = pair.indexOf('=');
    const value = decoded(pair.slice(equals + 1));
    if (value === undefined) return undefined;
    parameters[pair.slice(0, equals).replaceAll('+', ' ')] = value;
  }
  return parameters;
}

function decoded(text: string): string | undefined {
  const spaced = text.replaceAll('+', ' ');
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return undefined;
  }
}
