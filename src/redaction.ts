import { isIPv6 } from 'node:net';

export const REDACTED = 'REDACTED';

/**
 * Candidates for IPv6: a maximal run of hex digits, colons and dots (a dotted IPv4 tail), not glued
 * to a word before it (so `std::io` stays), with an optional zone; Node's own parser decides. One
 * greedy run and no lookahead keep the scan linear on long strings.
 */
const IPV6_CANDIDATE = /(?<![\w:.])[0-9A-Fa-f:.]+(?:%[0-9A-Za-z._~-]+)?/g;
/** Dotted quads of one to three digits: over-redacting a version string beats leaking an address. */
const IPV4 = /(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\d|\.\d)/g;

function redactIpv6(candidate: string, offset: number, text: string): string {
  if (!candidate.includes(':') || /[\w:]/.test(text[offset + candidate.length] ?? '')) return candidate;
  const trailingDots = /\.*$/.exec(candidate)![0];
  const address = candidate.slice(0, candidate.length - trailingDots.length);
  const withoutZone = address.split('%')[0]!;
  if (!/[0-9A-Fa-f]/.test(withoutZone) || !isIPv6(withoutZone)) return candidate;
  return `${REDACTED}${trailingDots}`;
}

/** Every IPv4 and IPv6 address inside a string replaced with REDACTED. */
export function redactText(text: string): string {
  return text.replace(IPV6_CANDIDATE, redactIpv6).replace(IPV4, REDACTED);
}

/** Every string value at any depth redacted; keys, numbers and booleans untouched. Returns a copy. */
export function redactPii<T>(value: T): T {
  if (typeof value === 'string') return redactText(value) as T;
  if (Array.isArray(value)) return value.map((element) => redactPii(element)) as T;
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, redactPii(inner)])) as T;
  }
  return value;
}
