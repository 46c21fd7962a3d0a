/**
 * LQL text to the syntax tree of ./syntax.ts. Purely syntactic: whether a path exists, a value fits
 * its field's type or a `f:` name is a CTE is the planner's business. Every failure is `LqlSyntax`
 * with the 1-based offset and what was expected there.
 */
import { LqlSyntax } from '../errors.ts';
import { lexLql, show, type ClauseToken, type FilterOperatorText, type ValueToken } from './lexer.ts';
import type { LqlChart, LqlComparison, LqlFilter, LqlPath, LqlQuery, LqlSelect, LqlTime, LqlValue } from './syntax.ts';

export const CHART_AGGREGATES: readonly LqlChart['aggregate'][] = ['count', 'countd', 'avg', 'sum', 'max', 'min', 'p50', 'p95', 'p99'];

const PERIODS: Readonly<Record<string, LqlChart['period']>> = {
  second: 'second',
  s: 'second',
  minute: 'minute',
  m: 'minute',
  hour: 'hour',
  h: 'hour',
  day: 'day',
  d: 'day',
};

type LastUnit = Extract<LqlTime, { kind: 'last' }>['unit'];
type ThisUnit = Extract<LqlTime, { kind: 'this' }>['unit'];

/** `last@N<unit>`: singular, plural and Logflare's short forms, stored plural. */
const LAST_UNITS: Readonly<Record<string, LastUnit>> = {
  second: 'seconds',
  seconds: 'seconds',
  s: 'seconds',
  minute: 'minutes',
  minutes: 'minutes',
  m: 'minutes',
  hour: 'hours',
  hours: 'hours',
  h: 'hours',
  day: 'days',
  days: 'days',
  d: 'days',
  week: 'weeks',
  weeks: 'weeks',
  w: 'weeks',
  month: 'months',
  months: 'months',
  mm: 'months',
};

const THIS_UNITS: Readonly<Record<string, ThisUnit>> = {
  minute: 'minute',
  minutes: 'minute',
  m: 'minute',
  hour: 'hour',
  hours: 'hour',
  h: 'hour',
  day: 'day',
  days: 'day',
  d: 'day',
  week: 'week',
  weeks: 'week',
  w: 'week',
  month: 'month',
  months: 'month',
  mm: 'month',
  year: 'year',
  years: 'year',
  y: 'year',
};

const TIMESTAMP_OPERATORS: Readonly<Partial<Record<FilterOperatorText, '=' | '<' | '<=' | '>' | '>='>>> = {
  ':': '=',
  ':>': '>',
  ':>=': '>=',
  ':<': '<',
  ':<=': '<=',
};

const FIELD_OPERATORS: Readonly<Record<FilterOperatorText, LqlComparison['operator']>> = {
  ':': '=',
  ':>': '>',
  ':>=': '>=',
  ':<': '<',
  ':<=': '<=',
  ':~': '~',
  ':@>': 'list_includes',
  ':@>~': 'list_includes_regex',
};

const NUMBER = /^-?[0-9]+(?:\.[0-9]+)?$/;
const NAME = /^[A-Za-z0-9_]+$/;
const DIGITS = /^[0-9]+$/;

/** Own entries only: `last@__proto__` must not find Object.prototype. */
function lookup<T>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

export function isNumberText(text: string): boolean {
  return NUMBER.test(text);
}

/** The `c:` clauses seen so far: an aggregate and a group_by may come in either order, once each. */
interface ChartDraft {
  aggregate?: LqlChart['aggregate'];
  path?: LqlPath;
  period?: LqlChart['period'];
  offset?: number;
}

export function parseLql(text: string): LqlQuery {
  const query: LqlQuery = { filters: [], select: [] };
  let chart: ChartDraft = {};
  for (const clause of lexLql(text)) {
    if (clause.kind !== 'keyed') {
      query.filters.push(freeTextFilter(clause));
      continue;
    }
    switch (clause.key) {
      case 'c':
      case 'chart':
        chart = chartClause(clause, chart);
        break;
      case 's':
      case 'select':
        query.select.push(selectClause(clause));
        break;
      case 'f':
      case 'from':
        if (query.from) throw new LqlSyntax('a query has at most one f: clause', clause.offset);
        query.from = { name: fromName(clause), offset: clause.offset };
        break;
      case 't':
      case 'timestamp':
        query.filters.push(timestampFilter(clause));
        break;
      default:
        query.filters.push(fieldFilter(clause));
    }
  }
  if (chart.offset !== undefined) {
    query.chart = {
      aggregate: chart.aggregate ?? 'count',
      ...(chart.path === undefined ? {} : { path: chart.path }),
      period: chart.period ?? 'minute',
      offset: chart.offset,
    };
  }
  return query;
}

type KeyedClause = Extract<ClauseToken, { kind: 'keyed' }>;

function freeTextFilter(clause: Exclude<ClauseToken, KeyedClause>): LqlFilter {
  const base = { kind: 'comparison', path: 'event_message', negated: clause.negated, offset: clause.offset } as const;
  switch (clause.kind) {
    case 'word':
      return { ...base, operator: 'contains', value: { kind: 'string', value: clause.text, quoted: false } };
    case 'phrase':
      return { ...base, operator: 'contains', value: { kind: 'string', value: clause.text, quoted: true } };
    case 'regex':
      return { ...base, operator: '~', value: stringValue(clause.value) };
  }
}

function stringValue(token: ValueToken): LqlValue {
  return { kind: 'string', value: token.text, quoted: token.kind === 'quoted' };
}

/**
 * A field path as written, normalised: `m.x` → `metadata.x`, `t` → `timestamp`. Dot-separated
 * names of letters, digits and `_`.
 */
function fieldPath(text: string, offset: number, what: string): LqlPath {
  const segments = text.split('.');
  segments.forEach((segment, index) => {
    if (!NAME.test(segment)) {
      const at = offset + segments.slice(0, index).join('.').length + (index > 0 ? 1 : 0);
      throw new LqlSyntax(`expected ${what}: names of letters, digits and _ separated by single dots, got ${show(text)}`, at);
    }
  });
  if (segments.length > 1 && (segments[0] === 'm' || segments[0] === 'metadata')) {
    return ['metadata', ...segments.slice(1)].join('.');
  }
  if (text === 't' || text === 'timestamp') return 'timestamp';
  return text;
}

function fieldFilter(clause: KeyedClause): LqlFilter {
  const path = fieldPath(clause.key, clause.offset + (clause.negated ? 1 : 0), 'a field path');
  const base = { path, negated: clause.negated, offset: clause.offset };
  const operator = FIELD_OPERATORS[clause.operator];
  const token = clause.value;
  if (!token) throw new LqlSyntax(`expected a value after ${clause.key}${clause.operator}`, clause.valueOffset);
  if (token.kind === 'quoted' || operator === '~' || operator === 'list_includes_regex') {
    return { kind: 'comparison', ...base, operator, value: stringValue(token) };
  }
  const text = token.text;
  if (text === 'NULL') {
    if (operator !== '=') throw new LqlSyntax(`NULL is matched with ${clause.key}:NULL, not ${clause.operator}`, token.offset);
    return { kind: 'comparison', ...base, operator: 'is_null' };
  }
  const rangeAt = text.indexOf('..');
  if (rangeAt >= 0 && operator !== 'list_includes') {
    if (operator !== '=') {
      throw new LqlSyntax(`a range a..b takes ':', not ${clause.operator}`, token.offset + rangeAt);
    }
    const low = text.slice(0, rangeAt);
    const high = text.slice(rangeAt + 2);
    if (low === '' || high === '' || high.includes('..')) {
      throw new LqlSyntax(`expected a range low..high with a value on each side, got ${show(text)}`, token.offset);
    }
    return { kind: 'range', ...base, low: rangeBound(low), high: rangeBound(high) };
  }
  return { kind: 'comparison', ...base, operator, value: bareValue(text) };
}

function bareValue(text: string): LqlValue {
  if (text === 'true' || text === 'false') return { kind: 'boolean', value: text === 'true' };
  return rangeBound(text);
}

function rangeBound(text: string): LqlValue {
  return isNumberText(text) ? { kind: 'number', text } : { kind: 'string', value: text, quoted: false };
}

const TIME_EXPECTED = 'an ISO 8601 date or datetime, a Unix time of 10, 13 or 16 digits, now, today, yesterday, this@<unit> or last@<N><unit>';

function timestampFilter(clause: KeyedClause): LqlFilter {
  const base = { kind: 'timestamp', path: 'timestamp', negated: clause.negated, offset: clause.offset } as const;
  const operator = TIMESTAMP_OPERATORS[clause.operator];
  if (!operator) {
    throw new LqlSyntax(`expected :, :>, :>=, :< or :<= after ${clause.key}, found ${clause.operator}`, clause.valueOffset - clause.operator.length);
  }
  const token = clause.value;
  if (!token || token.kind === 'quoted') {
    throw new LqlSyntax(`expected ${TIME_EXPECTED} after ${clause.key}${clause.operator}`, clause.valueOffset);
  }
  const text = token.text;
  const rangeOnly = (what: string): void => {
    if (operator !== '=') throw new LqlSyntax(`${what} takes ':', not ${clause.operator}`, token.offset);
  };
  if (text.includes('{')) {
    rangeOnly('a brace range');
    const [low, high] = expandBraces(text, token.offset);
    return { ...base, operator: 'range', times: [absoluteTime(low, token.offset), absoluteTime(high, token.offset)] };
  }
  const rangeAt = text.indexOf('..');
  if (rangeAt >= 0) {
    rangeOnly('a range a..b');
    const low = text.slice(0, rangeAt);
    const high = text.slice(rangeAt + 2);
    return {
      ...base,
      operator: 'range',
      times: [absoluteTime(low, token.offset), absoluteTime(high, token.offset + rangeAt + 2)],
    };
  }
  return { ...base, operator, times: [time(text, token.offset)] };
}

/** `2022-04-{07..09}T00:{00..40}:00` → the text with every low bound, and with every high bound. */
function expandBraces(text: string, offset: number): [string, string] {
  let low = '';
  let high = '';
  let i = 0;
  while (i < text.length) {
    const open = text.indexOf('{', i);
    if (open < 0) break;
    const close = text.indexOf('}', open);
    const inner = close < 0 ? '' : text.slice(open + 1, close);
    const dots = inner.indexOf('..');
    const from = inner.slice(0, Math.max(dots, 0));
    const to = inner.slice(dots + 2);
    if (close < 0 || dots < 0 || !DIGITS.test(from) || !DIGITS.test(to)) {
      throw new LqlSyntax(`expected a brace range {digits..digits} in ${show(text)}`, offset + open);
    }
    low += text.slice(i, open) + from;
    high += text.slice(i, open) + to;
    i = close + 1;
  }
  if (text.indexOf('}', i) >= 0) throw new LqlSyntax(`unmatched } in ${show(text)}`, offset + text.indexOf('}', i));
  return [low + text.slice(i), high + text.slice(i)];
}

/** A range end: an ISO date or datetime, or a Unix time. */
function absoluteTime(text: string, offset: number): LqlTime {
  if (DIGITS.test(text)) return unixTime(text, offset);
  if (isIsoTime(text)) return { kind: 'iso', text };
  throw new LqlSyntax(`expected an ISO 8601 date or datetime or a Unix time of 10, 13 or 16 digits, got ${show(text)}`, offset);
}

function unixTime(digits: string, offset: number): LqlTime {
  if (digits.length !== 10 && digits.length !== 13 && digits.length !== 16) {
    throw new LqlSyntax(`expected a Unix time of 10, 13 or 16 digits (seconds, milliseconds, microseconds), got ${digits.length} digits`, offset);
  }
  return { kind: 'unix', digits };
}

function time(text: string, offset: number): LqlTime {
  if (text === 'now' || text === 'today' || text === 'yesterday') return { kind: 'relative', name: text };
  if (text.startsWith('this@')) {
    const unit = lookup(THIS_UNITS, text.slice(5));
    if (!unit) throw new LqlSyntax(`unknown unit ${text.slice(5)}; use minute, hour, day, week, month, year`, offset + 5);
    return { kind: 'this', unit };
  }
  if (text.startsWith('last@')) return lastTime(text, offset);
  if (DIGITS.test(text)) return unixTime(text, offset);
  if (isIsoTime(text)) return { kind: 'iso', text };
  throw new LqlSyntax(`expected ${TIME_EXPECTED}, got ${show(text)}`, offset);
}

function lastTime(text: string, offset: number): LqlTime {
  let i = 5;
  while (i < text.length && i < 10 && text.charCodeAt(i) >= 48 && text.charCodeAt(i) <= 57) i += 1;
  const digits = text.slice(5, i);
  if (digits.length > 4) throw new LqlSyntax('expected at most 4 digits after last@', offset + 5);
  const amount = digits === '' ? 1 : Number(digits);
  if (amount < 1) throw new LqlSyntax('expected an amount of at least 1 after last@', offset + 5);
  const unitText = text.slice(i);
  const unit = lookup(LAST_UNITS, unitText);
  if (!unit) {
    const shown = unitText === '' ? 'after the amount' : unitText;
    throw new LqlSyntax(`unknown unit ${shown}; use minutes, hours, days, weeks, months (or seconds)`, offset + i);
  }
  return { kind: 'last', amount, unit };
}

/** YYYY-MM-DD, or YYYY-MM-DDTHH:MM:SS with up to 6 fraction digits and Z, ±HH:MM or no zone. */
export function isIsoTime(text: string): boolean {
  const number = (from: number, length: number): number => {
    const part = text.slice(from, from + length);
    return part.length === length && DIGITS.test(part) ? Number(part) : -1;
  };
  const year = number(0, 4);
  const month = number(5, 2);
  const day = number(8, 2);
  if (year < 0 || text[4] !== '-' || text[7] !== '-' || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] as number;
  if (day > monthDays) return false;
  if (text.length === 10) return true;
  const hour = number(11, 2);
  const minute = number(14, 2);
  const second = number(17, 2);
  if (text[10] !== 'T' || text[13] !== ':' || text[16] !== ':') return false;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return false;
  let i = 19;
  if (text[i] === '.') {
    let end = i + 1;
    while (end < text.length && end - i <= 6 && DIGITS.test(text[end] as string)) end += 1;
    if (end === i + 1 || (end < text.length && DIGITS.test(text[end] as string))) return false;
    i = end;
  }
  if (i === text.length) return true;
  if (text[i] === 'Z') return i + 1 === text.length;
  if (text[i] !== '+' && text[i] !== '-') return false;
  const zoneHour = number(i + 1, 2);
  const zoneMinute = number(i + 4, 2);
  return text[i + 3] === ':' && zoneHour >= 0 && zoneHour <= 23 && zoneMinute >= 0 && zoneMinute <= 59 && i + 6 === text.length;
}

function chartClause(clause: KeyedClause, chart: ChartDraft): ChartDraft {
  if (clause.negated) throw new LqlSyntax('- negates filters only, not c:', clause.offset);
  const token = clause.value;
  const expected = `expected ${CHART_AGGREGATES.join('(…), ')}(…) or group_by(t::<period>) after ${clause.key}:`;
  if (clause.operator !== ':' || !token || token.kind === 'quoted') throw new LqlSyntax(expected, clause.valueOffset);
  const text = token.text;
  const open = text.indexOf('(');
  if (open < 0 || !text.endsWith(')')) throw new LqlSyntax(expected, token.offset);
  const name = text.slice(0, open);
  const argument = text.slice(open + 1, -1);
  const offset = chart.offset ?? clause.offset;
  if (name === 'group_by') {
    if (chart.period) throw new LqlSyntax('a query has at most one c:group_by', clause.offset);
    const separator = argument.indexOf('::');
    const field = argument.slice(0, Math.max(separator, 0));
    const period = lookup(PERIODS, argument.slice(separator + 2));
    if (separator < 0 || (field !== 't' && field !== 'timestamp') || !period) {
      throw new LqlSyntax('expected group_by(t::second|minute|hour|day)', token.offset + open + 1);
    }
    return { ...chart, period, offset };
  }
  const aggregate = CHART_AGGREGATES.find((candidate) => candidate === name);
  if (!aggregate) throw new LqlSyntax(expected, token.offset);
  if (chart.aggregate) throw new LqlSyntax('a query has at most one chart aggregate', clause.offset);
  if (argument === '*') {
    if (aggregate !== 'count') throw new LqlSyntax(`expected a field path in ${aggregate}(…); only count takes *`, token.offset + open + 1);
    return { ...chart, aggregate, offset };
  }
  const path = fieldPath(argument, token.offset + open + 1, `a field path in ${aggregate}(…)`);
  return { ...chart, aggregate, path, offset };
}

function selectClause(clause: KeyedClause): LqlSelect {
  if (clause.negated) throw new LqlSyntax('- negates filters only, not s:', clause.offset);
  const token = clause.value;
  if (clause.operator !== ':' || !token || token.kind === 'quoted') {
    throw new LqlSyntax(`expected a field path or * after ${clause.key}:`, clause.valueOffset);
  }
  if (token.text === '*') return { kind: 'all', offset: clause.offset };
  const at = token.text.indexOf('@');
  const pathText = at < 0 ? token.text : token.text.slice(0, at);
  const path = fieldPath(pathText, token.offset, 'a field path or * to select');
  if (at < 0) return { kind: 'field', path, offset: clause.offset };
  const alias = token.text.slice(at + 1);
  if (!NAME.test(alias)) throw new LqlSyntax('expected an alias of letters, digits and _ after @', token.offset + at + 1);
  return { kind: 'field', path, alias, offset: clause.offset };
}

function fromName(clause: KeyedClause): string {
  if (clause.negated) throw new LqlSyntax('- negates filters only, not f:', clause.offset);
  const token = clause.value;
  if (clause.operator !== ':' || !token || token.kind === 'quoted' || !NAME.test(token.text)) {
    throw new LqlSyntax(`expected a table name of letters, digits and _ after ${clause.key}:`, clause.valueOffset);
  }
  return token.text;
}
