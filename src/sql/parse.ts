/**
 * The SQL parser: sqlparser-rs (the grammar the reference implementation's server uses) compiled to
 * WebAssembly, in its BigQuery dialect. `initSqlParser()` loads it once at start-up; afterwards
 * `parseStatements` is synchronous.
 *
 * We drive the package's wasm-bindgen module directly instead of its `parse()` wrapper for two
 * reasons, both measured on 0.62:
 * - `parse()` hands the tree over through serde-wasm-bindgen, which overflows the WebAssembly stack
 *   on a chain of about 700 `+` or `and`; the JSON string export survives about 3,200.
 * - After such an overflow the instance is corrupt: every later parse fails with "memory access out
 *   of bounds". The package keeps one instance for the process; we keep a spare, swap it in at once
 *   and load a new one in the background, so one hostile query cannot disable the sandbox.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { SandboxViolation, SqlSyntax, type QueryPosition } from '../errors.ts';

/** The one export of the wasm-bindgen module we use. */
interface ParserInstance {
  parse_sql_to_json_string(dialect: string, sql: string): string;
}

interface GlueModule extends ParserInstance {
  initSync(options: { module: WebAssembly.Module }): unknown;
}

/** One statement of the parser's JSON tree (`{"Query": {...}}`, `{"Insert": {...}}`, ...). */
export type RawStatement = Record<string, unknown>;

interface Engine {
  compiled: WebAssembly.Module;
  glueUrl: string;
  active: ParserInstance;
  /** Undefined while its replacement loads. */
  spare: ParserInstance | undefined;
}

let engine: Engine | undefined;
let loading: Promise<void> | undefined;
let instancesLoaded = 0;

/** Loads the parser (once; later calls wait for the same load). */
export function initSqlParser(): Promise<void> {
  loading ??= loadEngine();
  return loading;
}

async function loadEngine(): Promise<void> {
  const packageEntry = createRequire(import.meta.url).resolve('@guanmingchiu/sqlparser-ts');
  const wasmFolder = new URL('../wasm/', pathToFileURL(packageEntry));
  const compiled = await WebAssembly.compile(await readFile(new URL('sqlparser_rs_wasm_bg.wasm', wasmFolder)));
  const glueUrl = new URL('sqlparser_rs_wasm.js', wasmFolder).href;
  const [active, spare] = await Promise.all([instantiate(compiled, glueUrl), instantiate(compiled, glueUrl)]);
  engine = { compiled, glueUrl, active, spare };
}

/** A fresh instance: the glue keeps its instance in module state, so each one is its own module copy. */
async function instantiate(compiled: WebAssembly.Module, glueUrl: string): Promise<ParserInstance> {
  const glue = (await import(`${glueUrl}?instance=${instancesLoaded++}`)) as GlueModule;
  glue.initSync({ module: compiled });
  return glue;
}

/** The parser's own errors start with this; anything else is a trap inside the WebAssembly code. */
const PARSER_ERROR_PREFIX = 'sql parser error: ';

/**
 * Parses the text into the parser's JSON statements (BigQuery dialect). Throws SqlSyntax for text
 * that does not parse and SandboxViolation when the text nests deeper than the parser allows.
 */
export function parseStatements(text: string): RawStatement[] {
  if (!engine) throw new Error('initSqlParser() must finish before SQL can be parsed');
  let json: string;
  try {
    json = engine.active.parse_sql_to_json_string('bigquery', text);
  } catch (error) {
    const message = typeof error === 'string' ? error : error instanceof Error ? error.message : String(error);
    if (!message.startsWith(PARSER_ERROR_PREFIX)) {
      replaceInstance(engine);
      throw new SandboxViolation('the query is too complex for the SQL parser: shorten its chains of operators or its nesting');
    }
    throw parserFailure(message.slice(PARSER_ERROR_PREFIX.length), text);
  }
  return JSON.parse(json) as RawStatement[];
}

/** Swaps the spare in for the trapped instance and loads a new spare in the background. */
function replaceInstance(current: Engine): void {
  const spare = current.spare;
  current.spare = undefined;
  if (spare) current.active = spare;
  instantiate(current.compiled, current.glueUrl).then(
    (fresh) => {
      if (spare) current.spare = fresh;
      else current.active = fresh;
    },
    // A failed load leaves things as they are; the next trap tries again.
    () => undefined,
  );
}

const LOCATION = / at Line: (\d+), Column: (\d+)$/;

function parserFailure(message: string, text: string): SqlSyntax | SandboxViolation {
  if (message.startsWith('recursion limit exceeded')) {
    return new SandboxViolation('the query nests too deeply for the SQL parser (parentheses, subqueries or function calls)');
  }
  const location = LOCATION.exec(message);
  if (location) {
    return new SqlSyntax(message.slice(0, location.index), { line: Number(location[1]), column: Number(location[2]) });
  }
  // "Expected: ), found: EOF" comes without a location: the problem is at the end of the text.
  return new SqlSyntax(message, message.endsWith('found: EOF') ? endOf(text) : undefined);
}

function endOf(text: string): QueryPosition {
  const lines = text.split('\n');
  return { line: lines.length, column: (lines.at(-1) ?? '').length + 1 };
}
