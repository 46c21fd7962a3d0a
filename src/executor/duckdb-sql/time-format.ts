/**
 * BigQuery's format elements (FORMAT_TIMESTAMP, PARSE_TIMESTAMP) rewritten for DuckDB's strftime
 * and strptime. Only UTC output is supported, so the zone elements print UTC's offset and name.
 * Not handled (refused, naming the element): %J, the %O/%E locale forms, and when parsing also %s,
 * %Z (a zone name), %C, %g, %Q and the week elements %U %W %V %u %w %G.
 */
import { InvalidQuery, SandboxViolation, type QueryPosition } from '../../errors.ts';
import type { SqlBudget } from './budget.ts';
import { quoteString } from './literals.ts';

/** Elements DuckDB's strftime writes the way BigQuery does. */
const SAME_IN_STRFTIME = new Set(['Y', 'm', 'd', 'H', 'M', 'S', 'I', 'p', 'j', 'a', 'A', 'b', 'B', 'h', 'y', 'U', 'W', 'w', 'u', 'V', 'G', '%']);
/** BigQuery shorthands, expanded before translation. */
const SHORTHANDS: Record<string, string> = {
  F: '%Y-%m-%d',
  T: '%H:%M:%S',
  D: '%m/%d/%y',
  R: '%H:%M',
  r: '%I:%M:%S %p',
  x: '%m/%d/%y',
  X: '%H:%M:%S',
  c: '%a %b %e %T %Y',
  n: '\n',
  t: '\t',
};

type Token = { kind: 'text'; text: string } | { kind: 'element'; name: string };

/** An element's name where a `%` leaves off (sticky: matched at lastIndex, without copying the rest of the format). */
const ELEMENT = /E\*S|E[1-6]S|E4Y|Ez|[A-Za-z%]/y;

function tokenize(format: string, position?: QueryPosition): Token[] {
  const tokens: Token[] = [];
  for (let i = 0; i < format.length; i++) {
    const char = format[i]!;
    if (char !== '%') {
      tokens.push({ kind: 'text', text: char });
      continue;
    }
    ELEMENT.lastIndex = i + 1;
    const element = ELEMENT.exec(format)?.[0];
    if (!element) throw new InvalidQuery(`unsupported format element %${format.slice(i + 1, i + 4)} in ${JSON.stringify(format)}`, position);
    const expansion = SHORTHANDS[element];
    if (expansion) tokens.push(...tokenize(expansion));
    else tokens.push({ kind: 'element', name: element });
    i += element.length;
  }
  return tokens;
}

function unsupported(element: string, format: string, position?: QueryPosition): never {
  throw new InvalidQuery(`format element %${element} in ${JSON.stringify(format)} is not supported here`, position);
}

/** Elements strftime has no spelling for, as DuckDB expressions over the UTC timestamp. */
const FORMATTED_PIECES: Record<string, (utc: string) => string> = {
  // the century, the ISO year within it, the hour space-padded (24 and 12 hour clocks), the quarter
  C: (utc) => `lpad(CAST(year(${utc}) // 100 AS VARCHAR), 2, '0')`,
  g: (utc) => `lpad(CAST(isoyear(${utc}) % 100 AS VARCHAR), 2, '0')`,
  k: (utc) => `lpad(CAST(hour(${utc}) AS VARCHAR), 2, ' ')`,
  l: (utc) => `lpad(CAST((hour(${utc}) + 11) % 12 + 1 AS VARCHAR), 2, ' ')`,
  Q: (utc) => `CAST(quarter(${utc}) AS VARCHAR)`,
  E4Y: (utc) => `lpad(CAST(year(${utc}) AS VARCHAR), 4, '0')`,
  P: (utc) => `lower(strftime(${utc}, '%p'))`,
};

/**
 * FORMAT_TIMESTAMP(format, ts) in UTC. `timestamp` is DuckDB text of a TIMESTAMPTZ, repeated in
 * several pieces (bind it first when it is more than a column); it is converted to a UTC TIMESTAMP
 * in each piece because strftime of a TIMESTAMPTZ would follow the session zone.
 */
export function formatTimestampSql(format: string, timestamp: string, budget: SqlBudget, position?: QueryPosition): string {
  const utc = `CAST(${timestamp} AS TIMESTAMP)`;
  const pieces: string[] = [];
  let strftime = '';
  const flush = (): void => {
    if (strftime) pieces.push(`strftime(${utc}, ${quoteString(strftime)})`);
    strftime = '';
  };
  for (const token of tokenize(format, position)) {
    if (token.kind === 'text') {
      strftime += token.text.replaceAll('%', '%%');
      continue;
    }
    const name = token.name;
    if (SAME_IN_STRFTIME.has(name)) strftime += `%${name}`;
    else if (name === 'E3S') strftime += '%S.%g';
    else if (name === 'E6S') strftime += '%S.%f';
    else if (/^E[1-6]S$/.test(name)) {
      // seconds, then the first # digits of the fraction (truncated, as BigQuery prints it)
      strftime += '%S.';
      flush();
      pieces.push(`substr(lpad(CAST(microsecond(${utc}) % 1000000 AS VARCHAR), 6, '0'), 1, ${name[1]})`);
    } else if (name === 'z') strftime += '+0000';
    else if (name === 'Ez') strftime += '+00:00';
    else if (name === 'Z') strftime += 'UTC';
    else if (name === 'E*S') {
      // seconds, then the fraction with trailing zeros removed (none at all on a whole second)
      strftime += '%S';
      flush();
      const micros = `(microsecond(${utc}) % 1000000)`;
      pieces.push(`(CASE WHEN ${micros} = 0 THEN '' ELSE '.' || rtrim(lpad(CAST(${micros} AS VARCHAR), 6, '0'), '0') END)`);
    } else if (name === 'e') {
      flush();
      pieces.push(`lpad(CAST(day(${utc}) AS VARCHAR), 2, ' ')`);
    } else if (FORMATTED_PIECES[name]) {
      flush();
      pieces.push(FORMATTED_PIECES[name](utc));
    } else if (name === 's') {
      flush();
      pieces.push(`CAST(CAST(floor(epoch_us(${timestamp}) / 1000000) AS BIGINT) AS VARCHAR)`);
    } else unsupported(name, format, position);
  }
  flush();
  if (pieces.length === 0) return `(CASE WHEN ${timestamp} IS NULL THEN NULL ELSE '' END)`;
  return pieces.length === 1 ? pieces[0]! : `(${budget.join(pieces, ' || ', position)})`;
}

/** Elements strptime reads as BigQuery does. */
const SAME_IN_STRPTIME = new Set(['Y', 'm', 'd', 'H', 'M', 'S', 'I', 'p', 'j', 'a', 'A', 'b', 'B', 'h', 'y', 'z', '%']);
/**
 * Elements strptime reads under another name: strptime takes a space-padded number for a zero-padded
 * one (it skips the space), and its %p reads pm as well as PM.
 */
const RENAMED_IN_STRPTIME: Record<string, string> = { e: 'd', k: 'H', l: 'I', P: 'p', E4Y: 'Y' };

/** Each %E*S doubles the formats strptime tries: real formats have one. */
const MAX_OPTIONAL_FRACTIONS = 2;
/** %Ez doubles them too (an offset or a Z); a timestamp has one zone. */
const MAX_ZONE_OFFSETS = 1;

/**
 * PARSE_TIMESTAMP(format, text): DuckDB strptime formats (several when %E*S makes the fraction
 * optional or %Ez may be Z; strptime tries each). Text without a zone element is read as UTC.
 */
export function parseTimestampFormats(format: string, position?: QueryPosition): string[] {
  const tokens = tokenize(format, position);
  const optional = tokens.filter((token) => token.kind === 'element' && token.name === 'E*S').length;
  if (optional > MAX_OPTIONAL_FRACTIONS) {
    throw new SandboxViolation(
      `the format has ${optional} %E*S elements; a format may have at most ${MAX_OPTIONAL_FRACTIONS} (each doubles the formats the engine tries)`,
      position,
    );
  }
  const offsets = tokens.filter((token) => token.kind === 'element' && token.name === 'Ez').length;
  if (offsets > MAX_ZONE_OFFSETS) {
    throw new SandboxViolation(`the format has ${offsets} %Ez elements; a format may have at most ${MAX_ZONE_OFFSETS}`, position);
  }
  let formats = [''];
  for (const token of tokens) {
    if (token.kind === 'text') {
      formats = formats.map((f) => f + token.text.replaceAll('%', '%%'));
      continue;
    }
    const name = token.name;
    if (SAME_IN_STRPTIME.has(name)) formats = formats.map((f) => `${f}%${name}`);
    else if (RENAMED_IN_STRPTIME[name]) formats = formats.map((f) => `${f}%${RENAMED_IN_STRPTIME[name]}`);
    // RFC 3339's offset, which may be written Z (strptime's %z reads only a signed offset)
    else if (name === 'Ez') formats = formats.flatMap((f) => [`${f}%z`, `${f}Z`]);
    else if (/^E[1-6]S$/.test(name)) formats = formats.map((f) => `${f}%S.%f`);
    else if (name === 'E*S') formats = formats.flatMap((f) => [`${f}%S.%f`, `${f}%S`]);
    else unsupported(name, format, position);
  }
  return formats;
}
