import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { KafkaConfig, SASLOptions } from 'kafkajs';
import { ConfigError, type Config, type KafkaSaslMechanism } from './config.ts';

export interface KafkaSasl {
  mechanism: KafkaSaslMechanism;
  username: string;
  password: string;
}

/** The brokers and how to reach them: read from the configuration once, used by every Kafka client. */
export interface KafkaConnection {
  brokers: string[];
  /** Present for SSL and SASL_SSL: TLS options as Node takes them. */
  tls?: ConnectionOptions;
  /** Present for SASL_SSL. */
  sasl?: KafkaSasl;
}

type KafkaSettings = Pick<
  Config,
  | 'KAFKA_BROKERS'
  | 'KAFKA_SECURITY_PROTOCOL'
  | 'KAFKA_SASL_MECHANISM'
  | 'KAFKA_SASL_USERNAME'
  | 'KAFKA_SASL_PASSWORD'
  | 'KAFKA_CA_FILE'
  | 'KAFKA_CLIENT_CERT_FILE'
  | 'KAFKA_CLIENT_KEY_FILE'
  | 'KAFKA_TLS_VERIFY'
>;

/** The connection the configuration names; `brokers` replaces KAFKA_BROKERS (npm start's local stack). */
export function kafkaConnection(config: KafkaSettings, brokers = config.KAFKA_BROKERS): KafkaConnection {
  if (!brokers || brokers.length === 0) throw new ConfigError(['KAFKA_BROKERS: required (the Kafka brokers to read and write)']);
  const protocol = config.KAFKA_SECURITY_PROTOCOL;
  if (protocol === 'PLAINTEXT') return { brokers };
  const tls: ConnectionOptions = {
    rejectUnauthorized: config.KAFKA_TLS_VERIFY,
    ...(config.KAFKA_CA_FILE ? { ca: [readFileSync(config.KAFKA_CA_FILE, 'utf8')] } : {}),
    ...(config.KAFKA_CLIENT_CERT_FILE && config.KAFKA_CLIENT_KEY_FILE
      ? { cert: readFileSync(config.KAFKA_CLIENT_CERT_FILE, 'utf8'), key: readFileSync(config.KAFKA_CLIENT_KEY_FILE, 'utf8') }
      : {}),
  };
  if (protocol === 'SSL') return { brokers, tls };
  // the schema has checked that SASL_SSL comes with a mechanism, a user and a password
  return { brokers, tls, sasl: { mechanism: config.KAFKA_SASL_MECHANISM!, username: config.KAFKA_SASL_USERNAME!, password: config.KAFKA_SASL_PASSWORD! } };
}

/** The part of a kafkajs client's options that says where the brokers are and how to authenticate. */
export function kafkajsConnectionOptions(connection: KafkaConnection): Pick<KafkaConfig, 'brokers' | 'ssl' | 'sasl'> {
  const { sasl } = connection;
  // kafkajs spells the mechanisms in lower case
  const mechanism = sasl && ({ PLAIN: 'plain', 'SCRAM-SHA-256': 'scram-sha-256', 'SCRAM-SHA-512': 'scram-sha-512' } as const)[sasl.mechanism];
  return {
    brokers: connection.brokers,
    ...(connection.tls ? { ssl: connection.tls } : {}),
    ...(sasl ? { sasl: { mechanism, username: sasl.username, password: sasl.password } as SASLOptions } : {}),
  };
}

/** How the connection authenticates, for messages: `SASL_SSL (SCRAM-SHA-512)`. */
export function describeKafkaSecurity(connection: KafkaConnection): string {
  if (connection.sasl) return `SASL_SSL (${connection.sasl.mechanism})`;
  return connection.tls ? 'SSL' : 'PLAINTEXT';
}
