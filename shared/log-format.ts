/** pino's numeric levels, as people read them. */
const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const LEVEL_COLOURS: Record<number, string> = { 10: '90', 20: '90', 30: '32', 40: '33', 50: '31', 60: '35' };
/** Fields every line has, or that the line shows in its own place. */
const SHOWN_ELSEWHERE = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg']);
const MAX_LINE = 200;

function fieldText(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) ? JSON.stringify(value) : value;
  if (value instanceof Object && 'message' in value && typeof value.message === 'string') return JSON.stringify(value.message);
  if (Array.isArray(value) && value.every((item) => typeof item !== 'object' || item === null)) return value.join(',');
  return JSON.stringify(value);
}

/**
 * One pino JSON line as a line for a terminal: `16:08:00 INFO  ingest  joined the consumer group
 * group=logplatform-ingest`, other fields as key=value, cut at 200 characters. Anything that is
 * not a pino line comes back as it was.
 */
export function humanLogLine(line: string, colour = false): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (entry === null || typeof entry !== 'object' || typeof entry.level !== 'number' || typeof entry.time !== 'number') return line;
  const time = new Date(entry.time).toISOString().slice(11, 19);
  const levelName = (LEVEL_NAMES[entry.level] ?? String(entry.level)).padEnd(5);
  const level = colour ? `\u001b[${LEVEL_COLOURS[entry.level] ?? '0'}m${levelName}\u001b[0m` : levelName;
  const fields = Object.entries(entry)
    .filter(([key, value]) => !SHOWN_ELSEWHERE.has(key) && value !== undefined)
    .map(([key, value]) => `${key}=${fieldText(value)}`)
    .join(' ');
  const text = `${String(entry.name ?? '').padEnd(6)} ${String(entry.msg ?? '')}${fields ? `  ${fields}` : ''}`;
  return `${time} ${level} ${text.length > MAX_LINE ? `${text.slice(0, MAX_LINE - 1)}…` : text}`;
}
