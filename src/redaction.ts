/**
 * PII redaction: every IPv4 and IPv6 address in every string and every object key of a result is
 * replaced with REDACTED. One hand-written left-to-right scan per string (no backtracking regex),
 * so the cost is linear in the text whatever it holds.
 *
 * How the scan reads text (docs/api.md "Redaction rules" has the same list for callers):
 * - Addresses are looked for inside runs of hex digits, `.` and `:`, where `%2E` and `%3A` (any
 *   case) count as `.` and `:` so percent-encoded addresses inside URLs are found too; any other
 *   character, `%5B` / `%5D` included, ends a run. Letters, `_`, brackets or a port around an
 *   address do not hide it.
 * - IPv4: four dot-separated numbers of one to three digits (no range check: anonymised samples
 *   hold octets such as 481). A dotted run of numbers holding four such parts is redacted whole, so
 *   `1.2.3.4.5` becomes REDACTED; `1.2.3` stays.
 * - IPv6: the longest valid address (full, compressed with `::`, or with an IPv4 tail) starting at
 *   each group, with its zone (`%eth0`, `%25eth0`) if any; a trailing `:443` port stays. A first
 *   group of more than four hex digits (`ab2001:db8::1`) is read from its last four.
 * - Left alone: `::` alone, and a compressed address of one or two groups right after a letter
 *   (`std::io`, `self::add`, `Foo::Bar`: code, not hosts); times (`12:30:45`), MAC addresses (six
 *   groups, no `::`), versions with three parts, hex ids without separators.
 */

export const REDACTED = 'REDACTED';

const CODE_0 = 48;
const CODE_9 = 57;
const CODE_DOT = 46;
const CODE_COLON = 58;
const CODE_PERCENT = 37;

function isDigitCode(code: number): boolean {
  return code >= CODE_0 && code <= CODE_9;
}

function isHexCode(code: number): boolean {
  return isDigitCode(code) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102);
}

function isLetterCode(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

/** `.` or `:` for `%2E` / `%3A` (any case) at `index`, else undefined. */
function encodedSeparator(text: string, index: number): number | undefined {
  if (text.charCodeAt(index) !== CODE_PERCENT) return undefined;
  const first = text.charCodeAt(index + 1);
  const second = text.charCodeAt(index + 2) | 0x20;
  if (first === 0x32 && second === 0x65) return CODE_DOT; // %2E
  if (first === 0x33 && second === 0x61) return CODE_COLON; // %3A
  return undefined;
}

/**
 * A run of address characters, decoded: `codes` holds only hex digits, dots and colons. Without
 * percent-escapes it is a slice of the text (`offsets` null: character i stands at `start + i`);
 * with them, `offsets[i]` is where decoded character i starts (`offsets[codes.length]` = the end).
 */
interface Run {
  codes: string;
  start: number;
  offsets: number[] | null;
}

function offsetOf(run: Run, index: number): number {
  return run.offsets ? run.offsets[index]! : run.start + index;
}

interface RunExtent {
  end: number;
  colons: number;
  dots: number;
  escaped: boolean;
}

/** Where the run of address characters from `start` ends, and what separators it holds. */
function runExtent(text: string, start: number): RunExtent {
  let index = start;
  let colons = 0;
  let dots = 0;
  let escaped = false;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (isHexCode(code)) {
      index += 1;
      continue;
    }
    const separator = code === CODE_DOT || code === CODE_COLON ? code : encodedSeparator(text, index);
    if (separator === undefined) break;
    if (separator === CODE_COLON) colons += 1;
    else dots += 1;
    if (code === CODE_PERCENT) {
      escaped = true;
      index += 3;
    } else index += 1;
  }
  return { end: index, colons, dots, escaped };
}

function readRun(text: string, start: number, extent: RunExtent): Run {
  if (!extent.escaped) return { codes: text.slice(start, extent.end), start, offsets: null };
  const characters: string[] = [];
  const offsets: number[] = [];
  let index = start;
  while (index < extent.end) {
    const code = text.charCodeAt(index);
    offsets.push(index);
    if (code === CODE_PERCENT) {
      characters.push(String.fromCharCode(encodedSeparator(text, index)!));
      index += 3;
    } else {
      characters.push(text[index]!);
      index += 1;
    }
  }
  offsets.push(index);
  return { codes: characters.join(''), start, offsets };
}

function hexLength(codes: string, start: number): number {
  let end = start;
  while (end < codes.length && isHexCode(codes.charCodeAt(end))) end += 1;
  return end - start;
}

/** End of a dotted quad of 1-3 digit numbers starting at `start` (an IPv6 tail), or -1. */
function ipv4TailEnd(codes: string, start: number): number {
  let position = start;
  for (let part = 0; part < 4; part += 1) {
    if (part > 0) {
      if (codes.charCodeAt(position) !== CODE_DOT) return -1;
      position += 1;
    }
    let digits = 0;
    while (digits < 4 && position < codes.length && isDigitCode(codes.charCodeAt(position))) {
      digits += 1;
      position += 1;
    }
    if (digits === 0 || digits > 3) return -1;
  }
  return position;
}

interface Ipv6Match {
  end: number;
  groups: number;
  compressed: boolean;
}

/** The longest valid IPv6 address starting at `start`, or undefined. Reads at most about 45 characters. */
function ipv6At(codes: string, start: number): Ipv6Match | undefined {
  let position = start;
  let groups = 0;
  let compressed = false;
  let bestEnd = -1;
  let bestGroups = 0;
  let bestCompressed = false;
  if (codes.charCodeAt(position) === CODE_COLON && codes.charCodeAt(position + 1) === CODE_COLON) {
    compressed = true;
    position += 2;
    bestEnd = position;
    bestCompressed = true;
  }
  while (groups < 8) {
    const length = hexLength(codes, position);
    if (length === 0) break;
    if (codes.charCodeAt(position + length) === CODE_DOT && (compressed ? groups <= 5 : groups === 6)) {
      const tailEnd = ipv4TailEnd(codes, position);
      if (tailEnd !== -1) return { end: tailEnd, groups: groups + 2, compressed };
    }
    // hex glued after the last group: the address is its first four digits
    position += Math.min(length, 4);
    groups += 1;
    if (compressed ? groups <= 7 : groups === 8) [bestEnd, bestGroups, bestCompressed] = [position, groups, compressed];
    if (length > 4) break;
    if (codes.charCodeAt(position) === CODE_COLON && codes.charCodeAt(position + 1) === CODE_COLON) {
      if (compressed) break;
      compressed = true;
      position += 2;
      if (groups <= 7) [bestEnd, bestGroups, bestCompressed] = [position, groups, true];
      continue;
    }
    if (codes.charCodeAt(position) === CODE_COLON && isHexCode(codes.charCodeAt(position + 1))) {
      position += 1;
      continue;
    }
    break;
  }
  return bestEnd === -1 ? undefined : { end: bestEnd, groups: bestGroups, compressed: bestCompressed };
}

/**
 * End of the dotted run of numbers starting at `start`, and whether it holds four consecutive
 * parts of 1-3 digits (then the whole run counts as an IPv4 address).
 */
function dottedNumbers(codes: string, start: number): { end: number; isAddress: boolean } {
  let position = start;
  let shortParts = 0;
  let isAddress = false;
  for (;;) {
    let digits = 0;
    while (position < codes.length && isDigitCode(codes.charCodeAt(position))) {
      digits += 1;
      position += 1;
    }
    shortParts = digits <= 3 ? shortParts + 1 : 0;
    if (shortParts >= 4) isAddress = true;
    if (codes.charCodeAt(position) === CODE_DOT && isDigitCode(codes.charCodeAt(position + 1))) {
      position += 1;
      continue;
    }
    return { end: position, isAddress };
  }
}

/** Decoded [start, end) spans of the addresses in a run, in order, not overlapping. */
function addressesInRun(text: string, run: Run): Array<[number, number, 'v4' | 'v6']> {
  const { codes } = run;
  const spans: Array<[number, number, 'v4' | 'v6']> = [];
  let index = 0;
  while (index < codes.length) {
    const code = codes.charCodeAt(index);
    const previous = index > 0 ? codes.charCodeAt(index - 1) : -1;
    const groupStart = isHexCode(code) && !isHexCode(previous);
    if (groupStart || (code === CODE_COLON && codes.charCodeAt(index + 1) === CODE_COLON)) {
      // a first group of more than four hex digits: the address may start in its last four
      const length = groupStart ? hexLength(codes, index) : 0;
      const start = length > 4 && codes.charCodeAt(index + length) === CODE_COLON ? index + length - 4 : index;
      const match = ipv6At(codes, start);
      if (match && match.end - start > 2 && acceptableIpv6(text, run, start, match)) {
        spans.push([start, match.end, 'v6']);
        index = match.end;
        continue;
      }
    }
    const dottedStart = isDigitCode(code) && !isDigitCode(previous) && !(previous === CODE_DOT && isDigitCode(index > 1 ? codes.charCodeAt(index - 2) : -1));
    if (dottedStart) {
      const dotted = dottedNumbers(codes, index);
      if (dotted.isAddress) {
        spans.push([index, dotted.end, 'v4']);
        index = dotted.end;
        continue;
      }
    }
    index += 1;
  }
  return spans;
}

/** Short compressed forms right after a letter are code (`std::io`, `self::add`), not hosts. */
function acceptableIpv6(text: string, run: Run, start: number, match: Ipv6Match): boolean {
  if (!match.compressed || match.groups > 2) return true;
  if (start > 0) return !isLetterCode(run.codes.charCodeAt(start - 1));
  const runStart = run.start;
  // the letter of a percent-escape (`%5B::1`) is no word
  const afterEscape = text.charCodeAt(runStart - 3) === CODE_PERCENT && isHexCode(text.charCodeAt(runStart - 2));
  return afterEscape || !isLetterCode(text.charCodeAt(runStart - 1));
}

/** Where a zone id after an IPv6 address ends (`%eth0`, or `%25eth0` inside a URL); `end` when there is none. */
function zoneEnd(text: string, end: number): number {
  if (text.charCodeAt(end) !== CODE_PERCENT) return end;
  const escaped = isHexCode(text.charCodeAt(end + 1)) && isHexCode(text.charCodeAt(end + 2));
  // `%5D` after an address is an encoded bracket, not a zone; `%25` is an encoded `%`
  if (escaped && !text.startsWith('25', end + 1)) return end;
  let position = escaped ? end + 3 : end + 1;
  const first = position;
  while (position < text.length && /[0-9A-Za-z._~-]/.test(text[position]!)) position += 1;
  return position === first ? end : position;
}

/** Every IPv4 and IPv6 address inside a string replaced with REDACTED. */
export function redactText(text: string): string {
  if (text.indexOf('.') === -1 && text.indexOf(':') === -1 && text.indexOf('%') === -1) return text;
  let output = '';
  let copiedUpTo = 0;
  let index = 0;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (!isHexCode(code) && code !== CODE_DOT && code !== CODE_COLON && encodedSeparator(text, index) === undefined) {
      // another percent-escape (`%5B`) is one boundary: its hex digits start no run
      index += code === CODE_PERCENT && isHexCode(text.charCodeAt(index + 1)) && isHexCode(text.charCodeAt(index + 2)) ? 3 : 1;
      continue;
    }
    const extent = runExtent(text, index);
    // an address needs two colons (`::1`) or three dots
    if (extent.colons < 2 && extent.dots < 3) {
      index = extent.end;
      continue;
    }
    const run = readRun(text, index, extent);
    let next = extent.end;
    for (const [start, end, kind] of addressesInRun(text, run)) {
      const originalStart = offsetOf(run, start);
      let originalEnd = offsetOf(run, end);
      if (kind === 'v6' && end === run.codes.length) {
        originalEnd = zoneEnd(text, originalEnd);
        next = Math.max(next, originalEnd);
      }
      output += text.slice(copiedUpTo, originalStart) + REDACTED;
      copiedUpTo = originalEnd;
    }
    index = Math.max(next, index + 1);
  }
  return copiedUpTo === 0 ? text : output + text.slice(copiedUpTo);
}

/**
 * Every string value and every object key at any depth redacted; numbers and booleans untouched.
 * Keys that become equal after redaction are told apart (`REDACTED`, `REDACTED_2`, ...) so no
 * value is lost. Returns a copy.
 */
export function redactPii<T>(value: T): T {
  if (typeof value === 'string') return redactText(value) as T;
  if (Array.isArray(value)) return value.map((element) => redactPii(element)) as T;
  if (typeof value === 'object' && value !== null) {
    const entries: Array<[string, unknown]> = [];
    const seen = new Set<string>();
    let suffix = 1;
    for (const [key, inner] of Object.entries(value)) {
      let redactedKey = redactText(key);
      const base = redactedKey;
      while (seen.has(redactedKey)) redactedKey = `${base}_${++suffix}`;
      seen.add(redactedKey);
      entries.push([redactedKey, redactPii(inner)]);
    }
    return Object.fromEntries(entries) as T;
  }
  return value;
}
