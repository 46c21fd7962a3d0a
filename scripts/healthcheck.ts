import { answerHelp } from '../shared/command-help.ts';
import { loadConfig } from '../shared/config.ts';

/**
 * `node dist/scripts/healthcheck.js query|ingest`: the Docker HEALTHCHECK of each process. Exits 0
 * when the process's own /health answers 2xx on the port its configuration gives, 1 otherwise.
 * Plain node, no curl: the runtime image has none.
 */
const USAGE = `Usage: node dist/scripts/healthcheck.js query|ingest
Exits 0 when that process's /health answers 2xx on the host and port its configuration gives, 1 otherwise.`;
answerHelp(USAGE);
const role = process.argv[2];
if (role !== 'query' && role !== 'ingest') {
  console.error(USAGE);
  process.exit(2);
}
const config = loadConfig(process.env);
const [host, port] = role === 'query' ? [config.HOST, config.PORT] : [config.INGEST_HOST, config.INGEST_PORT];
// a wildcard bind answers on loopback; a specific address only on itself
const target = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
const url = `http://${target.includes(':') ? `[${target}]` : target}:${port}/health`;
try {
  const response = await fetch(url, { signal: AbortSignal.timeout(4000) });
  if (!response.ok) console.error(`${url} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  process.exit(response.ok ? 0 : 1);
} catch (error) {
  console.error(`${url}: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
