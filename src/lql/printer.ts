/**
 * The syntax tree back to canonical LQL: `parseLql(printLql(q))` gives `q` again, offsets aside
 * (they point into the printed text). Canonical means one spelling per meaning: `m.` for metadata,
 * `t:` for timestamps, long unit and period names, both chart clauses, a value bare when the bare
 * form reads back the same and quoted otherwise.
 */
import { scanBare } from './lexer.ts';
import { isNumberText } from './parser.ts';
import type { LqlChart, LqlComparison, LqlFilter, LqlPath, LqlQuery, LqlSelect, LqlTime, LqlValue } from './syntax.ts';

const OPERATOR_TEXT: Readonly<Record<Exclude<LqlComparison['operator'], 'contains' | 'is_null'>, string>> = {
  '=': ':',
  '<': ':<',
  '<=': ':<=',
  '>': ':>',
  '>=': ':>=',
  '~': ':~',
  list_includes: ':@>',
  list_includes_regex: ':@>~',
};

/** Value starts that the lexer reads as a second operator. */
const OPERATOR_STARTS = new Set(['>', '<', '=', '~', '@', ':']);

export function printLql(query: LqlQuery): string {
  const clauses = [
    ...query.filters.map(printFilter),
    ...(query.chart ? printChart(query.chart) : []),
    ...query.select.map(printSelect),
    ...(query.from ? [`f:${query.from.name}`] : []),
  ];
  return clauses.join(' ');
}

/** Thrown only for trees the parser cannot produce (e.g. `contains` on a field other than event_message). */
function unprintable(what: string): never {
  throw new Error(`not expressible in LQL: ${what}`);
}

function quote(text: string): string {
  return `"${text.replace(/[\\"]/g, (ch) => `\\${ch}`)}"`;
}

function readsBackWhole(text: string, colonAllowed: boolean): boolean {
  return text !== '' && scanBare(text, 0, colonAllowed) === text.length;
}

function printPath(path: LqlPath): string {
  return path.startsWith('metadata.') ? `m.${path.slice('metadata.'.length)}` : path;
}

function printFilter(filter: LqlFilter): string {
  const sign = filter.negated ? '-' : '';
  switch (filter.kind) {
    case 'comparison':
      return sign + printComparison(filter);
    case 'range':
      return `${sign}${printPath(filter.path)}:${printRangeBound(filter.low, 'low')}..${printRangeBound(filter.high, 'high')}`;
    case 'timestamp': {
      const [first, second] = filter.times;
      if (filter.operator === 'range') {
        if (!second) unprintable('a timestamp range with one time');
        return `${sign}t:${printRangeTime(first)}..${printRangeTime(second)}`;
      }
      return `${sign}t${OPERATOR_TEXT[filter.operator]}${printTime(first)}`;
    }
  }
}

function printComparison(filter: LqlComparison): string {
  const { operator, value } = filter;
  if (operator === 'is_null') return `${printPath(filter.path)}:NULL`;
  if (!value) unprintable(`${operator} without a value`);
  if (filter.path === 'event_message' && (operator === 'contains' || operator === '~')) {
    if (value.kind !== 'string') unprintable(`free text that is not a string`);
    if (operator === '~') {
      const bare = !value.quoted && readsBackWhole(value.value, true) && value.value[0] !== '~';
      return `~${bare ? value.value : quote(value.value)}`;
    }
    const bare = !value.quoted && readsBackWhole(value.value, false) && value.value[0] !== '-' && value.value[0] !== '~';
    return bare ? value.value : quote(value.value);
  }
  if (operator === 'contains') unprintable(`contains on ${filter.path}`);
  return `${printPath(filter.path)}${OPERATOR_TEXT[operator]}${printValue(value, operator)}`;
}

function printValue(value: LqlValue, operator: LqlComparison['operator']): string {
  switch (value.kind) {
    case 'number':
      return value.text;
    case 'boolean':
      return String(value.value);
    case 'null':
      return 'NULL';
    case 'string': {
      const text = value.value;
      const regex = operator === '~' || operator === 'list_includes_regex';
      const bare =
        !value.quoted &&
        readsBackWhole(text, true) &&
        !OPERATOR_STARTS.has(text[0] as string) &&
        (regex || (text !== 'NULL' && text !== 'true' && text !== 'false' && !isNumberText(text))) &&
        (regex || operator === 'list_includes' || !text.includes('..'));
      return bare ? text : quote(text);
    }
  }
}

/** A range bound reads back only if the text splits at the same `..`: the low bound may not end with `.`. */
function printRangeBound(value: LqlValue, end: 'low' | 'high'): string {
  if (value.kind === 'number') return value.text;
  if (value.kind !== 'string' || value.quoted) unprintable('a range bound that is not a number or a bare string');
  const text = value.value;
  const bare =
    readsBackWhole(text, true) &&
    !text.includes('..') &&
    !isNumberText(text) &&
    (end === 'high' || (!OPERATOR_STARTS.has(text[0] as string) && !text.endsWith('.')));
  if (!bare) unprintable(`the range bound ${JSON.stringify(text)}`);
  return text;
}

function printTime(time: LqlTime): string {
  switch (time.kind) {
    case 'iso':
      return time.text;
    case 'unix':
      return time.digits;
    case 'relative':
      return time.name;
    case 'this':
      return `this@${time.unit}`;
    case 'last':
      return `last@${time.amount}${time.unit}`;
  }
}

function printRangeTime(time: LqlTime): string {
  if (time.kind !== 'iso' && time.kind !== 'unix') unprintable(`${time.kind} time in a range`);
  return printTime(time);
}

function printChart(chart: LqlChart): string[] {
  if (chart.path === undefined && chart.aggregate !== 'count') unprintable(`${chart.aggregate} without a field`);
  const argument = chart.path === undefined ? '*' : printPath(chart.path);
  return [`c:${chart.aggregate}(${argument})`, `c:group_by(t::${chart.period})`];
}

function printSelect(select: LqlSelect): string {
  if (select.kind === 'all') return 's:*';
  return `s:${printPath(select.path)}${select.alias === undefined ? '' : `@${select.alias}`}`;
}
