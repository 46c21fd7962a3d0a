import type { Client } from '@elastic/elasticsearch';
import { Kafka, logLevel } from 'kafkajs';
import { credentialVariables, type ElasticsearchConnection } from './elasticsearch.ts';
import { describeKafkaSecurity, kafkajsConnectionOptions, type KafkaConnection } from './kafka-connection.ts';

/**
 * A server refused us for a reason waiting will not fix (credentials, certificate, protocol), or
 * stayed unreachable: the process stops with this message instead of retrying while looking healthy.
 */
export class ServerAccessError extends Error {
  override name = 'ServerAccessError';
}

/** What a failed attempt means: `fatal` ends start-up at once, otherwise the server may still be coming up. */
export interface AccessFailure {
  fatal: boolean;
  message: string;
}

/** Node's codes for a certificate the client does not accept. */
const UNTRUSTED_CERTIFICATE_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);
const CERTIFICATE_PROBLEMS: Array<{ test: RegExp; problem: (caVariable: string) => string }> = [
  {
    test: /self[- ]signed certificate|unable to verify the first certificate|unable to get (local )?issuer certificate|certificate signature failure/i,
    problem: (caVariable) => `presented a certificate this client does not trust: set ${caVariable} to the PEM file of the CA that signed it`,
  },
  {
    test: /altnames|does not match certificate|ERR_TLS_CERT_ALTNAME_INVALID/i,
    problem: () => 'presented a certificate issued for another host name: connect by a name or address the certificate lists',
  },
  { test: /certificate has expired|CERT_HAS_EXPIRED/i, problem: () => 'presented an expired certificate' },
  { test: /certificate is not yet valid|CERT_NOT_YET_VALID/i, problem: () => 'presented a certificate that is not valid yet (check the clocks)' },
];

interface ErrorChain {
  /** Messages, names and codes of the error and its causes: what the patterns below look at. */
  text: string;
  /** The messages only, for people. */
  summary: string;
}

/** kafkajs wraps the root cause in `originalError` (retries) or `cause`; the patterns must see it. */
function errorChain(error: unknown): ErrorChain {
  const parts: string[] = [];
  const messages: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth += 1) {
    const { name, message, code, originalError, cause } = current as {
      name?: string;
      message?: string;
      code?: string;
      originalError?: unknown;
      cause?: unknown;
    };
    if (message) parts.push(message);
    if (message && !messages.includes(message)) messages.push(message);
    if (name && name !== 'Error') parts.push(name);
    if (typeof code === 'string') parts.push(code);
    current = originalError ?? cause;
  }
  const summary = messages.join(': ').split('\n')[0] ?? '';
  return { text: parts.join(' | '), summary: summary.length > 300 ? `${summary.slice(0, 300)}…` : summary };
}

function certificateProblem(text: string, caVariable: string): string | undefined {
  const code = text.split(' | ').find((part) => UNTRUSTED_CERTIFICATE_CODES.has(part));
  if (code) return CERTIFICATE_PROBLEMS[0]!.problem(caVariable);
  return CERTIFICATE_PROBLEMS.find((entry) => entry.test.test(text))?.problem(caVariable);
}

/** Why an Elasticsearch request failed, in words an operator can act on. */
export function elasticsearchFailure(error: unknown, connection: ElasticsearchConnection): AccessFailure {
  const server = `Elasticsearch at ${connection.url}`;
  const status = (error as { meta?: { statusCode?: number } }).meta?.statusCode;
  const { text, summary } = errorChain(error);
  if (status === 401) {
    return connection.credentials
      ? { fatal: true, message: `${server} rejected the credentials (401): check ${credentialVariables(connection)}` }
      : { fatal: true, message: `${server} requires authentication (401): set ${credentialVariables(connection)}` };
  }
  if (status === 403) {
    return { fatal: true, message: `${server} accepted the credentials but refused access (403): the user or API key lacks privileges (${summary})` };
  }
  const certificate = certificateProblem(text, 'ELASTICSEARCH_CA_FILE');
  if (certificate) return { fatal: true, message: `${server} ${certificate} (${summary})` };
  if (/wrong version number|EPROTO|packet length too long/i.test(text)) {
    return { fatal: true, message: `${server} does not answer TLS (${summary}): if it serves plain HTTP, use an http:// URL` };
  }
  if (connection.url.startsWith('http:') && /other side closed|socket hang up|ECONNRESET/i.test(text)) {
    return { fatal: true, message: `${server} closed the connection on a plain HTTP request (${summary}): if it serves HTTPS, use an https:// URL` };
  }
  return { fatal: false, message: `${server} is unreachable (${summary})` };
}

/** Why connecting to Kafka failed, in words an operator can act on. */
export function kafkaFailure(error: unknown, connection: KafkaConnection): AccessFailure {
  const server = `Kafka at ${connection.brokers.join(',')} (${describeKafkaSecurity(connection)})`;
  const { text, summary } = errorChain(error);
  if (/SASLAuthenticationError|SASL .*(authentication failed|Invalid username or password)|Authentication failed/i.test(text)) {
    return {
      fatal: true,
      message: `${server}: SASL authentication failed: check KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD and KAFKA_SASL_MECHANISM (${summary})`,
    };
  }
  if (/mechanism is not supported|UNSUPPORTED_SASL_MECHANISM/i.test(text)) {
    return { fatal: true, message: `${server} does not offer this SASL mechanism: check KAFKA_SASL_MECHANISM (${summary})` };
  }
  const certificate = certificateProblem(text, 'KAFKA_CA_FILE');
  if (certificate) return { fatal: true, message: `${server} ${certificate} (${summary})` };
  if (/CERTIFICATE_REQUIRED|alert (certificate|handshake|bad certificate|unknown ca)|sslv3 alert/i.test(text)) {
    return {
      fatal: true,
      message: `${server} refused the TLS handshake (${summary}): the listener may require a client certificate the broker trusts (KAFKA_CLIENT_CERT_FILE / KAFKA_CLIENT_KEY_FILE)`,
    };
  }
  if (connection.tls && /before secure TLS connection was established|wrong version number|EPROTO/i.test(text)) {
    return { fatal: true, message: `${server}: the listener does not answer TLS (${summary}): check KAFKA_SECURITY_PROTOCOL and the port` };
  }
  const hint = connection.tls ? '' : '; if the listener uses TLS or SASL, set KAFKA_SECURITY_PROTOCOL';
  return { fatal: false, message: `${server} is unreachable (${summary})${hint}` };
}

export interface CheckOptions {
  /** How long a server that is not answering yet is waited for; 0 = one attempt. */
  waitMs: number;
  /** Called once per failed attempt that will be retried. */
  onRetry?: (message: string) => void;
}

/**
 * Retries while the failure may pass (the server is starting) and throws ServerAccessError at once
 * when it will not. Resolves with undefined when the server answered, or with the last reason when
 * it never did and the caller may carry on without it (`waitMs` spent, `required` false).
 */
async function retryUntilAnswered(
  attempt: () => Promise<void>,
  classify: (error: unknown) => AccessFailure,
  options: CheckOptions & { required: boolean },
): Promise<string | undefined> {
  const deadline = Date.now() + options.waitMs;
  for (let round = 0; ; round += 1) {
    try {
      await attempt();
      return undefined;
    } catch (error) {
      const failure = classify(error);
      if (failure.fatal) throw new ServerAccessError(failure.message);
      if (Date.now() >= deadline) {
        if (options.required)
          throw new ServerAccessError(options.waitMs > 0 ? `${failure.message}; gave up after ${Math.round(options.waitMs / 1000)} s` : failure.message);
        return failure.message;
      }
      options.onRetry?.(failure.message);
      await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 250 * 2 ** round)));
    }
  }
}

/**
 * Proves the credentials and the certificate before anything else uses the client. Resolves with a
 * reason when Elasticsearch was unreachable and `required` is false (the query service answers 503
 * until it comes back).
 */
export function checkElasticsearch(
  client: Client,
  connection: ElasticsearchConnection,
  options: CheckOptions & { required: boolean },
): Promise<string | undefined> {
  return retryUntilAnswered(
    async () => {
      // cluster health needs only the `monitor` privilege (the minimal distribution has no GET /)
      await client.cluster.health({ timeout: '1s' }, { requestTimeout: 10_000 });
    },
    (error) => elasticsearchFailure(error, connection),
    options,
  );
}

/** Connects and authenticates to a broker with a client of its own, without kafkajs' retries. */
export function checkKafka(connection: KafkaConnection, options: CheckOptions & { required: boolean }): Promise<string | undefined> {
  const kafka = new Kafka({
    clientId: 'logplatform-startup-check',
    ...kafkajsConnectionOptions(connection),
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10_000,
    retry: { retries: 0 },
  });
  return retryUntilAnswered(
    async () => {
      const admin = kafka.admin();
      try {
        await admin.connect();
        await admin.describeCluster();
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    },
    (error) => kafkaFailure(error, connection),
    options,
  );
}
