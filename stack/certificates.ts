import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { StackError } from './server-process.ts';

/** A private CA and what it signed for one secured local stack; every file lives in one folder. */
export interface StackCertificates {
  folder: string;
  /** PEM of the CA: what clients trust (ELASTICSEARCH_CA_FILE, KAFKA_CA_FILE). */
  caFile: string;
  /** PKCS#12 key store of the servers' certificate (127.0.0.1 and localhost), for Kafka and Elasticsearch. */
  serverKeystore: string;
  /** PKCS#12 trust store holding the CA: what Kafka checks client certificates against. */
  truststore: string;
  /** Password of both stores. */
  storePassword: string;
  /** PEM certificate and unencrypted PEM key of a client signed by the CA (KAFKA_CLIENT_CERT_FILE / KEY_FILE). */
  clientCertFile: string;
  clientKeyFile: string;
}

const SERVER_NAMES = 'SAN=ip:127.0.0.1,dns:localhost';
const VALIDITY_DAYS = '30';
/** keytool runs a JVM per call: a short-lived one starts faster without the optimising compiler. */
const FAST_JVM = ['-J-XX:TieredStopAtLevel=1', '-J-XX:+UseSerialGC', '-J-Xshare:auto'];

/** Runs a tool without blocking the event loop (keytool takes a second or more per call). */
function run(command: string, args: string[], what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, command.endsWith('keytool') ? [...FAST_JVM, ...args] : args, { encoding: 'utf8' }, (error, stdout, stderr) => {
      if (!error) return resolve();
      if (typeof error.code === 'string') {
        return reject(new StackError(`${what}: ${command} could not run (${error.message}); keytool comes with the JDK, openssl with the openssl package`));
      }
      reject(new StackError(`${what} failed: ${command} ${args[0]}: ${(stderr || stdout).trim()}`));
    });
  });
}

/**
 * Makes a CA, a server certificate for 127.0.0.1 / localhost and a client certificate with the JDK's
 * keytool; openssl only turns the client's PKCS#12 key into the PEM that Node reads.
 */
export async function createStackCertificates(javaHome: string, folder: string): Promise<StackCertificates> {
  mkdirSync(folder, { recursive: true });
  const keytool = path.join(javaHome, 'bin', 'keytool');
  const storePassword = randomBytes(12).toString('hex');
  const store = (name: string) => path.join(folder, name);
  const common = ['-storetype', 'PKCS12', '-storepass', storePassword, '-keypass', storePassword];
  const keypair = (file: string, alias: string, dname: string, extensions: string[]) =>
    run(
      keytool,
      [
        '-genkeypair',
        '-keystore',
        file,
        '-alias',
        alias,
        '-keyalg',
        'RSA',
        '-keysize',
        '2048',
        '-validity',
        VALIDITY_DAYS,
        '-dname',
        dname,
        ...extensions,
        ...common,
      ],
      `making the ${alias} key`,
    );
  const signed = async (file: string, alias: string, extensions: string[]) => {
    const request = store(`${alias}.csr`);
    const certificate = store(`${alias}.pem`);
    await run(keytool, ['-certreq', '-keystore', file, '-alias', alias, '-file', request, ...common], `requesting the ${alias} certificate`);
    await run(
      keytool,
      [
        '-gencert',
        '-keystore',
        store('ca.p12'),
        '-alias',
        'ca',
        '-infile',
        request,
        '-outfile',
        certificate,
        '-rfc',
        '-validity',
        VALIDITY_DAYS,
        ...extensions,
        ...common,
      ],
      `signing the ${alias} certificate`,
    );
    // the chain first, so the store holds the CA before the reply that needs it
    await run(
      keytool,
      ['-importcert', '-keystore', file, '-alias', 'ca', '-file', store('ca.pem'), '-noprompt', ...common],
      `adding the CA to ${path.basename(file)}`,
    );
    await run(keytool, ['-importcert', '-keystore', file, '-alias', alias, '-file', certificate, ...common], `storing the ${alias} certificate`);
    return certificate;
  };

  await keypair(store('ca.p12'), 'ca', 'CN=logplatform local test CA', ['-ext', 'bc:c', '-ext', 'KU=keyCertSign,cRLSign']);
  await run(
    keytool,
    ['-exportcert', '-keystore', store('ca.p12'), '-alias', 'ca', '-rfc', '-file', store('ca.pem'), ...common],
    'exporting the CA certificate',
  );

  // with the CA in place, the server, the client and the trust store are independent of each other
  const serverExtensions = ['-ext', SERVER_NAMES, '-ext', 'KU=digitalSignature,keyEncipherment', '-ext', 'EKU=serverAuth,clientAuth'];
  const clientExtensions = ['-ext', 'KU=digitalSignature,keyEncipherment', '-ext', 'EKU=clientAuth'];
  const clientKeyFile = store('client.key');
  const [, clientCertFile] = await Promise.all([
    keypair(store('server.p12'), 'server', 'CN=127.0.0.1', serverExtensions).then(() => signed(store('server.p12'), 'server', serverExtensions)),
    keypair(store('client.p12'), 'client', 'CN=logplatform-client', clientExtensions).then(async () => {
      const certificate = await signed(store('client.p12'), 'client', clientExtensions);
      await run(
        'openssl',
        ['pkcs12', '-in', store('client.p12'), '-nocerts', '-nodes', '-passin', `pass:${storePassword}`, '-out', clientKeyFile],
        'exporting the client key',
      );
      return certificate;
    }),
    run(
      keytool,
      ['-importcert', '-keystore', store('truststore.p12'), '-alias', 'ca', '-file', store('ca.pem'), '-noprompt', ...common],
      'making the trust store',
    ),
  ]);

  return {
    folder,
    caFile: store('ca.pem'),
    serverKeystore: store('server.p12'),
    truststore: store('truststore.p12'),
    storePassword,
    clientCertFile,
    clientKeyFile,
  };
}
