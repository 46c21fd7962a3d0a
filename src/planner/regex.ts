import { BadParameter } from '../errors.ts';

/**
 * Translates a regular expression written as clients write them (JavaScript / RE2 syntax, matched
 * anywhere in the text) into Lucene regular-expression syntax, which Elasticsearch's `regexp` query
 * matches against the WHOLE term. The pattern is parsed to a small AST and re-emitted with every
 * literal escaped, so no character can turn into a Lucene operator. Constructs Lucene cannot express
 * are rejected with BadParameter naming the construct: a pattern never silently means something else.
 *
 * Matching is on code points in Lucene and on UTF-16 units in JavaScript; they differ only for
 * characters outside the Basic Multilingual Plane.
 */

type Range = readonly [number, number];

/** A set of code points: ranges, or everything outside them. */
interface CharSet {
  kind: 'set';
  ranges: Range[];
  negated: boolean;
}

/** Any of several sets (a class mixing negated shorthands such as [\Da]). */
interface CharUnion {
  kind: 'union';
  sets: CharSet[];
}

interface Repeat {
  kind: 'repeat';
  node: Node;
  min: number;
  max: number | null;
}

interface Group {
  kind: 'group';
  alternatives: Node[][];
}

type Node = CharSet | CharUnion | Repeat | Group;

/** Top-level alternative with its anchors taken off. */
interface Branch {
  anchoredStart: boolean;
  anchoredEnd: boolean;
  items: Node[];
}

const MAX_REPEAT = 1000;
/**
 * Bounds checked before any parsing, so hostile patterns cost nothing: Elasticsearch refuses a
 * regexp longer than 1000 characters anyway (index.max_regex_length), nesting is parsed by
 * recursion, and the expanded size (repeat counts multiplied out) is what the store's automaton grows with.
 */
export const MAX_PATTERN_LENGTH = 1000;
export const MAX_GROUP_DEPTH = 32;
const MAX_EXPANDED_SIZE = 10_000;

function tooComplex(parameter: string, what: string): never {
  throw new BadParameter(`${parameter}: the pattern ${what}; simplify it`, 'pattern_too_complex');
}

const DIGIT: Range[] = [[0x30, 0x39]];
const WORD: Range[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
/** JavaScript's \s: WhiteSpace plus LineTerminator. */
const SPACE: Range[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
/** What JavaScript's `.` (without the s flag) refuses: the line terminators. */
const LINE_TERMINATORS: Range[] = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];

const set = (ranges: Range[], negated = false): CharSet => ({ kind: 'set', ranges, negated });
const char = (code: number): CharSet => set([[code, code]]);

function reject(parameter: string, pattern: string, construct: string): never {
  throw new BadParameter(
    `${parameter}: ${construct} is not supported in the pattern ${JSON.stringify(pattern)}; use literals, classes, groups, alternation, quantifiers and ^ / $ at the ends`,
    'unsupported_pattern',
  );
}

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(
    private readonly pattern: string,
    /** Named in every error, so the caller knows which of its inputs was wrong. */
    private readonly parameter: string,
  ) {}

  parse(): Branch[] {
    const alternatives = this.alternatives();
    if (this.pos < this.pattern.length)
      throw new BadParameter(`${this.parameter}: unbalanced ')' at position ${this.pos} in ${JSON.stringify(this.pattern)}`, 'invalid_pattern');
    return alternatives.map((raw) => this.branch(raw));
  }

  /** Anchors are only meaningful at the ends of a top-level alternative, which is where Lucene can express them. */
  private branch(raw: (Node | 'start' | 'end')[]): Branch {
    let items = raw;
    let anchoredStart = false;
    let anchoredEnd = false;
    while (items[0] === 'start') {
      anchoredStart = true;
      items = items.slice(1);
    }
    while (items[items.length - 1] === 'end') {
      anchoredEnd = true;
      items = items.slice(0, -1);
    }
    if (items.some((item) => item === 'start' || item === 'end')) reject(this.parameter, this.pattern, 'an anchor (^ or $) in the middle of the pattern');
    return { anchoredStart, anchoredEnd, items: items as Node[] };
  }

  private peek(offset = 0): string | undefined {
    return this.pattern[this.pos + offset];
  }

  private alternatives(): (Node | 'start' | 'end')[][] {
    const alternatives = [this.sequence()];
    while (this.peek() === '|') {
      this.pos += 1;
      alternatives.push(this.sequence());
    }
    return alternatives;
  }

  private sequence(): (Node | 'start' | 'end')[] {
    const items: (Node | 'start' | 'end')[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || c === ')') return items;
      if (c === '^' || c === '$') {
        this.pos += 1;
        items.push(c === '^' ? 'start' : 'end');
        if (this.quantifierAhead()) reject(this.parameter, this.pattern, `a quantifier on the anchor ${c}`);
        continue;
      }
      const atom = this.atom();
      items.push(this.quantified(atom));
    }
  }

  private quantifierAhead(): boolean {
    const c = this.peek();
    return c === '*' || c === '+' || c === '?' || (c === '{' && this.braceQuantifier() !== null);
  }

  /** `{n}`, `{n,}` or `{n,m}` at the cursor, without consuming it; null when `{` is a literal (as JavaScript reads it). */
  private braceQuantifier(): { min: number; max: number | null; length: number } | null {
    const brace = /\{(\d+)(,(\d*))?\}/y;
    brace.lastIndex = this.pos;
    const match = brace.exec(this.pattern);
    if (!match) return null;
    const min = Number(match[1]);
    const max = match[2] === undefined ? min : match[3] === '' ? null : Number(match[3]);
    return { min, max, length: match[0].length };
  }

  private quantified(atom: Node): Node {
    let min: number;
    let max: number | null;
    const c = this.peek();
    if (c === '*') [min, max] = [0, null];
    else if (c === '+') [min, max] = [1, null];
    else if (c === '?') [min, max] = [0, 1];
    else if (c === '{') {
      const brace = this.braceQuantifier();
      if (!brace) return atom;
      [min, max] = [brace.min, brace.max];
      this.pos += brace.length - 1;
    } else return atom;
    this.pos += 1;
    // a lazy quantifier matches the same texts; only the chosen submatch differs
    if (this.peek() === '?') this.pos += 1;
    if (this.quantifierAhead())
      throw new BadParameter(`${this.parameter}: nothing to repeat at position ${this.pos} in ${JSON.stringify(this.pattern)}`, 'invalid_pattern');
    if (max !== null && max < min) throw new BadParameter(`${this.parameter}: quantifier {${min},${max}} has its numbers out of order`, 'invalid_pattern');
    if (min > MAX_REPEAT || (max !== null && max > MAX_REPEAT)) reject(this.parameter, this.pattern, `a repeat count above ${MAX_REPEAT}`);
    return { kind: 'repeat', node: atom, min, max };
  }

  private atom(): Node {
    const c = this.peek()!;
    if (c === '*' || c === '+' || c === '?')
      throw new BadParameter(
        `${this.parameter}: nothing to repeat before '${c}' at position ${this.pos} in ${JSON.stringify(this.pattern)}`,
        'invalid_pattern',
      );
    if (c === '{' && this.braceQuantifier() !== null)
      throw new BadParameter(`${this.parameter}: nothing to repeat before '{' at position ${this.pos}`, 'invalid_pattern');
    if (c === '(') return this.group();
    if (c === '[') return this.charClass();
    if (c === '.') {
      this.pos += 1;
      return set(LINE_TERMINATORS, true);
    }
    if (c === '\\') return this.escape(false);
    const code = this.pattern.codePointAt(this.pos)!;
    this.pos += code > 0xffff ? 2 : 1;
    return char(code);
  }

  private startsWith(text: string): boolean {
    return this.pattern.startsWith(text, this.pos);
  }

  private group(): Group {
    if (this.startsWith('(?=') || this.startsWith('(?!')) reject(this.parameter, this.pattern, 'lookahead (?= or (?!');
    if (this.startsWith('(?<=') || this.startsWith('(?<!')) reject(this.parameter, this.pattern, 'lookbehind (?<= or (?<!');
    let open = 1;
    if (this.startsWith('(?:')) open = 3;
    else if (this.startsWith('(?<') || this.startsWith('(?P<')) {
      // a named group matches like any group; only a backreference to it would differ, and those are rejected
      const named = /\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>/y;
      named.lastIndex = this.pos;
      const match = named.exec(this.pattern);
      if (!match) throw new BadParameter(`${this.parameter}: invalid group name at position ${this.pos} in ${JSON.stringify(this.pattern)}`, 'invalid_pattern');
      open = match[0].length;
    } else if (this.startsWith('(?'))
      reject(
        this.parameter,
        this.pattern,
        `inline flags or modifiers such as (?i) (matching is case-sensitive; write both cases in a class instead, e.g. [Aa])`,
      );
    this.pos += open;
    this.depth += 1;
    if (this.depth > MAX_GROUP_DEPTH) tooComplex(this.parameter, `nests groups more than ${MAX_GROUP_DEPTH} deep`);
    const alternatives = this.alternatives();
    this.depth -= 1;
    if (this.peek() !== ')') throw new BadParameter(`${this.parameter}: unterminated group in ${JSON.stringify(this.pattern)}`, 'invalid_pattern');
    this.pos += 1;
    if (alternatives.some((items) => items.some((item) => item === 'start' || item === 'end'))) {
      reject(this.parameter, this.pattern, 'an anchor (^ or $) inside a group');
    }
    return { kind: 'group', alternatives: alternatives as Node[][] };
  }

  private charClass(): CharSet | CharUnion {
    this.pos += 1;
    const negated = this.peek() === '^';
    if (negated) this.pos += 1;
    const ranges: Range[] = [];
    const negatedSets: CharSet[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw new BadParameter(`${this.parameter}: unterminated character class in ${JSON.stringify(this.pattern)}`, 'invalid_pattern');
      if (c === ']') {
        this.pos += 1;
        break;
      }
      const low = this.classAtom();
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        const dash = this.pos;
        this.pos += 1;
        const high = this.classAtom();
        if (isSingle(low) && isSingle(high)) {
          if (high.ranges[0]![0] < low.ranges[0]![0])
            throw new BadParameter(
              `${this.parameter}: character class range out of order at position ${dash} in ${JSON.stringify(this.pattern)}`,
              'invalid_pattern',
            );
          ranges.push([low.ranges[0]![0], high.ranges[0]![0]]);
          continue;
        }
        // JavaScript reads [\d-z] as \d, '-' and 'z'
        addToClass(low, ranges, negatedSets);
        ranges.push([0x2d, 0x2d]);
        addToClass(high, ranges, negatedSets);
        continue;
      }
      addToClass(low, ranges, negatedSets);
    }
    if (ranges.length === 0 && negatedSets.length === 0) {
      // [] matches nothing and [^] matches everything
      if (negated) return set([], true);
      reject(this.parameter, this.pattern, 'the empty class []');
    }
    if (negatedSets.length === 0) return set(ranges, negated);
    if (negated) reject(this.parameter, this.pattern, 'a negated shorthand (\\D, \\W or \\S) inside a negated class');
    const sets = ranges.length > 0 ? [set(ranges), ...negatedSets] : negatedSets;
    return sets.length === 1 ? sets[0]! : { kind: 'union', sets };
  }

  private classAtom(): CharSet {
    const c = this.peek()!;
    if (c === '\\') {
      const node = this.escape(true);
      if (node.kind !== 'set') throw new Error('class escapes are sets');
      return node;
    }
    const code = this.pattern.codePointAt(this.pos)!;
    this.pos += code > 0xffff ? 2 : 1;
    return char(code);
  }

  private escape(inClass: boolean): CharSet {
    this.pos += 1;
    const c = this.peek();
    if (c === undefined) throw new BadParameter(`${this.parameter}: the pattern ${JSON.stringify(this.pattern)} ends with a lone backslash`, 'invalid_pattern');
    this.pos += 1;
    switch (c) {
      case 'd':
        return set(DIGIT);
      case 'D':
        return set(DIGIT, true);
      case 'w':
        return set(WORD);
      case 'W':
        return set(WORD, true);
      case 's':
        return set(SPACE);
      case 'S':
        return set(SPACE, true);
      case 't':
        return char(0x09);
      case 'n':
        return char(0x0a);
      case 'v':
        return char(0x0b);
      case 'f':
        return char(0x0c);
      case 'r':
        return char(0x0d);
      case 'b':
        if (inClass) return char(0x08);
        return reject(this.parameter, this.pattern, 'the word boundary \\b');
      case 'B':
        return reject(this.parameter, this.pattern, 'the non-boundary \\B');
      case 'p':
      case 'P':
        return reject(this.parameter, this.pattern, `the Unicode property class \\${c}{..}`);
      case 'k':
        return reject(this.parameter, this.pattern, 'the named backreference \\k<..>');
      case 'A':
      case 'z':
      case 'Z':
        return reject(this.parameter, this.pattern, `the RE2 anchor \\${c} (use ^ or $)`);
      case 'c': {
        const letter = this.peek();
        if (letter !== undefined && /[A-Za-z]/.test(letter)) {
          this.pos += 1;
          return char(letter.charCodeAt(0) % 32);
        }
        return reject(this.parameter, this.pattern, 'the control escape \\c without a letter');
      }
      case 'x': {
        const hex = /^[0-9A-Fa-f]{2}/.exec(this.pattern.slice(this.pos, this.pos + 2));
        if (!hex) return reject(this.parameter, this.pattern, '\\x without two hex digits');
        this.pos += 2;
        return char(parseInt(hex[0], 16));
      }
      case 'u': {
        const hex = /^[0-9A-Fa-f]{4}/.exec(this.pattern.slice(this.pos, this.pos + 4));
        if (!hex) return reject(this.parameter, this.pattern, '\\u without four hex digits (\\u{...} needs the u flag)');
        this.pos += 4;
        return char(parseInt(hex[0], 16));
      }
      case '0':
        if (/[0-9]/.test(this.peek() ?? '')) return reject(this.parameter, this.pattern, 'an octal escape');
        return char(0);
      default:
        if (/[1-9]/.test(c)) return reject(this.parameter, this.pattern, `the backreference \\${c}`);
        // identity escape: \. \/ \- and friends stand for the character itself
        this.pos -= 1;
        {
          const code = this.pattern.codePointAt(this.pos)!;
          this.pos += code > 0xffff ? 2 : 1;
          return char(code);
        }
    }
  }
}

function isSingle(node: CharSet): boolean {
  return !node.negated && node.ranges.length === 1 && node.ranges[0]![0] === node.ranges[0]![1];
}

function addToClass(node: CharSet, ranges: Range[], negatedSets: CharSet[]): void {
  if (node.negated) negatedSets.push(node);
  else ranges.push(...node.ranges);
}

/** Every character but ASCII letters and digits is escaped: Lucene's backslash makes any character literal. */
function literal(code: number): string {
  const text = String.fromCodePoint(code);
  return /[A-Za-z0-9]/.test(text) ? text : `\\${text}`;
}

function emitSet(node: CharSet): string {
  if (node.negated && node.ranges.length === 0) return '.';
  if (!node.negated && node.ranges.length === 1 && node.ranges[0]![0] === node.ranges[0]![1]) return literal(node.ranges[0]![0]);
  const body = node.ranges.map(([low, high]) => (low === high ? literal(low) : `${literal(low)}-${literal(high)}`)).join('');
  return `[${node.negated ? '^' : ''}${body}]`;
}

function emit(node: Node): string {
  switch (node.kind) {
    case 'set':
      return emitSet(node);
    case 'union':
      return `(${node.sets.map(emitSet).join('|')})`;
    case 'group':
      return `(${node.alternatives.map((items) => items.map(emit).join('')).join('|')})`;
    case 'repeat': {
      const inner = node.node.kind === 'set' || node.node.kind === 'group' || node.node.kind === 'union' ? emit(node.node) : `(${emit(node.node)})`;
      if (node.min === 0 && node.max === null) return `${inner}*`;
      if (node.min === 1 && node.max === null) return `${inner}+`;
      if (node.min === 0 && node.max === 1) return `${inner}?`;
      if (node.max === null) return `${inner}{${node.min},}`;
      if (node.min === node.max) return `${inner}{${node.min}}`;
      return `${inner}{${node.min},${node.max}}`;
    }
  }
}

/** How many character positions a node stands for once repeats are written out (unbounded ones counted once). */
function nodeSize(node: Node): number {
  switch (node.kind) {
    case 'set':
    case 'union':
      return 1;
    case 'group':
      return node.alternatives.reduce((total, items) => total + sequenceSize(items), 0);
    case 'repeat':
      return nodeSize(node.node) * Math.max(1, node.max ?? node.min);
  }
}

function sequenceSize(items: Node[]): number {
  return items.reduce((total, item) => total + nodeSize(item), 0);
}

/** Matches anything, so it adds nothing next to the `.*` an unanchored end gets: `a*`, `.*`, `[^]*`. */
function isOptionalRun(node: Node): boolean {
  return node.kind === 'repeat' && node.min === 0 && node.max === null;
}

/**
 * One top-level alternative as Lucene matches it against the whole term: an unanchored end gets
 * `.*`, which makes an optional run at that end needless (the automaton grows with every loop).
 */
function emitContaining(branch: Branch): string {
  let items = branch.items;
  if (!branch.anchoredStart) while (items.length > 0 && isOptionalRun(items[0]!)) items = items.slice(1);
  if (!branch.anchoredEnd) while (items.length > 0 && isOptionalRun(items[items.length - 1]!)) items = items.slice(0, -1);
  const body = items.map(emit).join('');
  if (body === '' && !(branch.anchoredStart && branch.anchoredEnd)) return '.*';
  return `${branch.anchoredStart ? '' : '.*'}${body}${branch.anchoredEnd ? '' : '.*'}`;
}

/**
 * Lucene regexp (for a `regexp` query with flags NONE) matching exactly the terms in which the
 * JavaScript RegExp `pattern` finds a match. Throws BadParameter, naming `parameter` (where the
 * pattern came from), for what cannot be translated.
 */
export function luceneRegexpForContains(pattern: string, parameter: string): string {
  if (pattern.length > MAX_PATTERN_LENGTH) tooComplex(parameter, `is ${pattern.length} characters long, more than ${MAX_PATTERN_LENGTH}`);
  const branches = new Parser(pattern, parameter).parse();
  const size = branches.reduce((total, branch) => total + sequenceSize(branch.items), 0);
  if (size > MAX_EXPANDED_SIZE)
    tooComplex(parameter, `expands to about ${size} characters once its repeats are multiplied out, more than ${MAX_EXPANDED_SIZE}`);
  try {
    new RegExp(pattern);
  } catch (error) {
    throw new BadParameter(`${parameter}: not a valid regular expression: ${(error as Error).message}`, 'invalid_pattern');
  }
  const emitted = branches.map(emitContaining);
  const lucene = emitted.length === 1 ? emitted[0]! : emitted.map((text) => `(${text})`).join('|');
  if (lucene.length > MAX_PATTERN_LENGTH)
    tooComplex(parameter, `becomes ${lucene.length} characters in the store's syntax, more than its limit of ${MAX_PATTERN_LENGTH}`);
  return lucene;
}
