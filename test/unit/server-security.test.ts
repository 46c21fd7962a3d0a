import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { errors as elasticsearchErrors } from '@elastic/elasticsearch';
import { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSSASLAuthenticationError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/config.ts';
import { elasticsearchConnection } from '../../shared/elasticsearch.ts';
import { kafkaConnection, kafkajsConnectionOptions } from '../../shared/kafka-connection.ts';
import { createLogger } from '../../shared/logger.ts';
import { elasticsearchFailure, kafkaFailure } from '../../shared/startup-checks.ts';

const folder = mkdtempSync(path.join(os.tmpdir(), 'server-security-'));
const caFile = path.join(folder, 'ca.pem');
const certFile = path.join(folder, 'client.pem');
const keyFile = path.join(folder, 'client.key');
writeFileSync(caFile, 'CA PEM');
writeFileSync(certFile, 'CLIENT CERT PEM');
writeFileSync(keyFile, 'CLIENT KEY PEM');

function configIssues(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.issues;
  }
}

const saslSsl = {
  KAFKA_BROKERS: 'b1:9093',
  KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
  KAFKA_SASL_MECHANISM: 'scram-sha-512',
  KAFKA_SASL_USERNAME: 'ingest',
  KAFKA_SASL_PASSWORD: 'pw-kafka',
};

describe('security configuration', () => {
  it('defaults to plaintext Kafka and verified TLS', () => {
    const config = loadConfig({});
    expect(config.KAFKA_SECURITY_PROTOCOL).toBe('PLAINTEXT');
    expect(config.ELASTICSEARCH_TLS_VERIFY).toBe(true);
    expect(config.KAFKA_TLS_VERIFY).toBe(true);
  });

  it('reads "false" as false (not as a non-empty string)', () => {
    const config = loadConfig({ ELASTICSEARCH_URL: 'https://es:9200', ELASTICSEARCH_TLS_VERIFY: 'false' });
    expect(config.ELASTICSEARCH_TLS_VERIFY).toBe(false);
    expect(configIssues({ ELASTICSEARCH_TLS_VERIFY: 'nope' })).toEqual(['ELASTICSEARCH_TLS_VERIFY: use true or false']);
  });

  it('accepts the mechanisms in any case and refuses others by name', () => {
    expect(loadConfig(saslSsl).KAFKA_SASL_MECHANISM).toBe('SCRAM-SHA-512');
    expect(loadConfig({ ...saslSsl, KAFKA_SASL_MECHANISM: 'PLAIN' }).KAFKA_SASL_MECHANISM).toBe('PLAIN');
    expect(configIssues({ ...saslSsl, KAFKA_SASL_MECHANISM: 'GSSAPI' })[0]).toMatch(/^KAFKA_SASL_MECHANISM: use one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512/);
    expect(configIssues({ KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT' })[0]).toMatch(/^KAFKA_SECURITY_PROTOCOL: use one of PLAINTEXT, SSL, SASL_SSL/);
  });

  it('names a password without its user, and a user without its password', () => {
    expect(configIssues({ ELASTICSEARCH_PASSWORD: 'secret' })).toEqual([
      'ELASTICSEARCH_PASSWORD: set, but ELASTICSEARCH_USERNAME is not: a password needs its user',
    ]);
    expect(configIssues({ ELASTICSEARCH_USERNAME: 'elastic' })).toEqual(['ELASTICSEARCH_USERNAME: set, but ELASTICSEARCH_PASSWORD is not']);
  });

  it('refuses an API key together with a user', () => {
    expect(configIssues({ ELASTICSEARCH_API_KEY: 'abc', ELASTICSEARCH_USERNAME: 'elastic', ELASTICSEARCH_PASSWORD: 'x' })[0]).toMatch(
      /^ELASTICSEARCH_API_KEY: .*not both/,
    );
  });

  it('refuses a CA file or an opt-out of verification for a plain-HTTP Elasticsearch', () => {
    expect(configIssues({ ELASTICSEARCH_URL: 'http://es:9200', ELASTICSEARCH_CA_FILE: caFile })).toEqual([
      'ELASTICSEARCH_CA_FILE: set, but ELASTICSEARCH_URL is http://es:9200 (plain HTTP): use an https:// URL',
    ]);
    expect(configIssues({ ELASTICSEARCH_URL: 'http://es:9200', ELASTICSEARCH_TLS_VERIFY: 'false' })[0]).toMatch(/^ELASTICSEARCH_TLS_VERIFY: /);
  });

  it('names a CA file that does not exist', () => {
    expect(configIssues({ ELASTICSEARCH_URL: 'https://es:9200', ELASTICSEARCH_CA_FILE: path.join(folder, 'missing.pem') })).toEqual([
      'ELASTICSEARCH_CA_FILE: no readable file at this path',
    ]);
  });

  it('requires a mechanism, a user and a password with SASL_SSL', () => {
    expect(configIssues({ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL' }).map((issue) => issue.split(':')[0])).toEqual([
      'KAFKA_SASL_MECHANISM',
      'KAFKA_SASL_USERNAME',
      'KAFKA_SASL_PASSWORD',
    ]);
  });

  it('refuses SASL or TLS settings the protocol would ignore', () => {
    expect(configIssues({ KAFKA_SASL_USERNAME: 'ingest' })).toEqual([
      'KAFKA_SASL_USERNAME: set, but KAFKA_SECURITY_PROTOCOL is PLAINTEXT: SASL needs KAFKA_SECURITY_PROTOCOL=SASL_SSL',
    ]);
    expect(configIssues({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SASL_PASSWORD: 'x' })[0]).toMatch(
      /^KAFKA_SASL_PASSWORD: set, but KAFKA_SECURITY_PROTOCOL is SSL/,
    );
    expect(configIssues({ KAFKA_CA_FILE: caFile })).toEqual(['KAFKA_CA_FILE: set, but KAFKA_SECURITY_PROTOCOL is PLAINTEXT: TLS files need SSL or SASL_SSL']);
  });

  it('wants a client certificate and its key together', () => {
    expect(configIssues({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_CLIENT_CERT_FILE: certFile })).toEqual([
      "KAFKA_CLIENT_KEY_FILE: required with KAFKA_CLIENT_CERT_FILE (the certificate's private key)",
    ]);
    expect(configIssues({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_CLIENT_KEY_FILE: keyFile })).toEqual([
      'KAFKA_CLIENT_CERT_FILE: required with KAFKA_CLIENT_KEY_FILE',
    ]);
  });
});

describe('connections built from the configuration', () => {
  it('gives Elasticsearch an API key, or a user, and the CA', () => {
    const withKey = elasticsearchConnection(loadConfig({ ELASTICSEARCH_URL: 'https://es:9200', ELASTICSEARCH_API_KEY: 'a2V5', ELASTICSEARCH_CA_FILE: caFile }));
    expect(withKey).toEqual({ url: 'https://es:9200', credentials: { apiKey: 'a2V5' }, caFile, verifyTls: true });
    const withUser = elasticsearchConnection(
      loadConfig({ ELASTICSEARCH_URL: 'https://es:9200', ELASTICSEARCH_USERNAME: 'elastic', ELASTICSEARCH_PASSWORD: 'pw' }),
    );
    expect(withUser.credentials).toEqual({ username: 'elastic', password: 'pw' });
    expect(elasticsearchConnection(loadConfig({ ELASTICSEARCH_URL: 'http://es:9200' })).credentials).toBeUndefined();
  });

  it('gives kafkajs TLS and SASL for SASL_SSL, TLS with a client certificate for SSL, neither for PLAINTEXT', () => {
    const sasl = kafkajsConnectionOptions(kafkaConnection(loadConfig({ ...saslSsl, KAFKA_CA_FILE: caFile })));
    expect(sasl).toEqual({
      brokers: ['b1:9093'],
      ssl: { rejectUnauthorized: true, ca: ['CA PEM'] },
      sasl: { mechanism: 'scram-sha-512', username: 'ingest', password: 'pw-kafka' },
    });
    const ssl = kafkajsConnectionOptions(
      kafkaConnection(
        loadConfig({
          KAFKA_BROKERS: 'b1:9094',
          KAFKA_SECURITY_PROTOCOL: 'SSL',
          KAFKA_CLIENT_CERT_FILE: certFile,
          KAFKA_CLIENT_KEY_FILE: keyFile,
          KAFKA_TLS_VERIFY: 'false',
        }),
      ),
    );
    expect(ssl).toEqual({ brokers: ['b1:9094'], ssl: { rejectUnauthorized: false, cert: 'CLIENT CERT PEM', key: 'CLIENT KEY PEM' } });
    expect(kafkajsConnectionOptions(kafkaConnection(loadConfig({ KAFKA_BROKERS: 'b1:9092' })))).toEqual({ brokers: ['b1:9092'] });
  });

  it('names the missing address', () => {
    expect(() => elasticsearchConnection(loadConfig({}))).toThrow(/ELASTICSEARCH_URL: required/);
    expect(() => kafkaConnection(loadConfig({}))).toThrow(/KAFKA_BROKERS: required/);
  });
});

function responseError(statusCode: number): Error {
  return new elasticsearchErrors.ResponseError({
    statusCode,
    body: { error: { type: 'security_exception', reason: 'refused' } },
    headers: {},
    warnings: null,
    meta: {} as never,
  });
}

describe('start-up failures in words', () => {
  const https = { url: 'https://127.0.0.1:9201', credentials: { username: 'elastic', password: 'pw' }, verifyTls: true };

  it('names the server and the variables for refused Elasticsearch credentials', () => {
    expect(elasticsearchFailure(responseError(401), https)).toEqual({
      fatal: true,
      message: 'Elasticsearch at https://127.0.0.1:9201 rejected the credentials (401): check ELASTICSEARCH_USERNAME / ELASTICSEARCH_PASSWORD',
    });
    expect(elasticsearchFailure(responseError(401), { ...https, credentials: { apiKey: 'k' } }).message).toMatch(/check ELASTICSEARCH_API_KEY$/);
    expect(elasticsearchFailure(responseError(401), { url: https.url }).message).toMatch(/requires authentication \(401\): set ELASTICSEARCH_API_KEY or/);
    expect(elasticsearchFailure(responseError(403), https)).toMatchObject({ fatal: true, message: expect.stringMatching(/refused access \(403\)/) });
  });

  it('tells an untrusted certificate from a server that is not up yet', () => {
    const untrusted = elasticsearchFailure(new elasticsearchErrors.ConnectionError('self-signed certificate in certificate chain'), https);
    expect(untrusted.fatal).toBe(true);
    expect(untrusted.message).toMatch(
      /^Elasticsearch at https:\/\/127\.0\.0\.1:9201 presented a certificate this client does not trust: set ELASTICSEARCH_CA_FILE/,
    );
    const refused = elasticsearchFailure(new elasticsearchErrors.ConnectionError('connect ECONNREFUSED 127.0.0.1:9201'), https);
    expect(refused).toEqual({ fatal: false, message: 'Elasticsearch at https://127.0.0.1:9201 is unreachable (connect ECONNREFUSED 127.0.0.1:9201)' });
    expect(elasticsearchFailure(responseError(503), https).fatal).toBe(false);
  });

  it('names the Kafka brokers, the mechanism and the variables for refused SASL credentials, also inside a retry error', () => {
    const connection = kafkaConnection(loadConfig({ ...saslSsl, KAFKA_CA_FILE: caFile }));
    // the typings declare no constructor arguments; kafkajs passes the message like every KafkaJSError
    const refused = new (KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error)(
      'SASL SCRAM SHA512 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512',
    );
    const expected = /^Kafka at b1:9093 \(SASL_SSL \(SCRAM-SHA-512\)\): SASL authentication failed: check KAFKA_SASL_USERNAME \/ KAFKA_SASL_PASSWORD/;
    expect(kafkaFailure(refused, connection)).toMatchObject({ fatal: true, message: expect.stringMatching(expected) });
    expect(kafkaFailure(new KafkaJSNumberOfRetriesExceeded(refused, { retryCount: 5, retryTime: 100 }), connection).message).toMatch(expected);
  });

  it('names KAFKA_CA_FILE for an untrusted broker certificate and keeps waiting for a refused connection', () => {
    const connection = kafkaConnection(loadConfig(saslSsl));
    const untrusted = kafkaFailure(
      new KafkaJSConnectionError('Connection error: self-signed certificate in certificate chain', { broker: 'b1:9093', code: 'SELF_SIGNED_CERT_IN_CHAIN' }),
      connection,
    );
    expect(untrusted).toMatchObject({ fatal: true, message: expect.stringMatching(/set KAFKA_CA_FILE/) });
    const refused = kafkaFailure(
      new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:9093', { broker: 'b1:9093', code: 'ECONNREFUSED' }),
      connection,
    );
    expect(refused.fatal).toBe(false);
  });
});

describe('log redaction of server credentials', () => {
  it('censors passwords and API keys in logged configuration and client options', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger('test', 'info', { destination: sink });
    const config = loadConfig({ ...saslSsl, ELASTICSEARCH_URL: 'https://es:9200', ELASTICSEARCH_USERNAME: 'elastic', ELASTICSEARCH_PASSWORD: 'pw-elastic' });
    logger.info({ config }, 'configuration');
    logger.info({ connection: elasticsearchConnection(config) }, 'elasticsearch');
    logger.info({ kafka: kafkajsConnectionOptions(kafkaConnection(config)) }, 'kafka');
    logger.info({ options: elasticsearchConnection(loadConfig({ ELASTICSEARCH_URL: 'https://es:9200', ELASTICSEARCH_API_KEY: 'key-secret' })) }, 'api key');
    const text = lines.join('');
    expect(lines).toHaveLength(4);
    for (const secret of ['pw-elastic', 'pw-kafka', 'key-secret']) expect(text).not.toContain(secret);
    expect(text).toContain('[redacted]');
    expect(text).toContain('elastic');
  });
});
