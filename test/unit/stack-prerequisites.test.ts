import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { analysisPluginDigest, artifactPaths, ensureArtifacts, findJavaHome } from '../../stack/artifacts.ts';
import { claimPort } from '../../stack/ports.ts';
import { StackError } from '../../stack/server-process.ts';
import { KAFKA_VERSION } from '../../stack/versions.ts';

/** A folder on PATH whose `mvn` prints the given line and fails as Maven does. */
function failingMaven(line: string): string {
  const bin = mkdtempSync(path.join(os.tmpdir(), 'stack-fake-mvn-'));
  writeFileSync(path.join(bin, 'mvn'), `#!/bin/sh\necho "${line}"\nexit 1\n`);
  chmodSync(path.join(bin, 'mvn'), 0o755);
  return bin;
}

describe('the stack launcher fails fast, naming what is missing', () => {
  const emptyCache = mkdtempSync(path.join(os.tmpdir(), 'stack-prerequisites-'));
  const held: Server[] = [];
  afterAll(() => {
    rmSync(emptyCache, { recursive: true, force: true });
    for (const server of held) server.close();
  });

  it('names the port in use and the variable that moves it', async () => {
    const server = createServer();
    held.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    await expect(claimPort(port, 'kafka', 'STACK_KAFKA_PORT', new Set())).rejects.toThrow(
      new RegExp(`port ${port} on 127\\.0\\.0\\.1 \\(kafka\\) is already in use.*STACK_KAFKA_PORT`),
    );
  });

  it('gives distinct free ports when several are picked by the OS', async () => {
    const claimed = new Set<number>();
    const ports = [];
    for (let index = 0; index < 4; index += 1) ports.push(await claimPort(0, 'any', 'X', claimed));
    expect(new Set(ports).size).toBe(4);
  });

  it('says java is missing when neither JAVA_HOME nor PATH has one', () => {
    expect(() => findJavaHome({ PATH: '/nonexistent' })).toThrow(StackError);
    expect(() => findJavaHome({ PATH: '/nonexistent' })).toThrow(/java was not found on PATH and JAVA_HOME is not set/);
  });

  it('says mvn is missing when the artifacts must be downloaded and Maven is not on PATH', async () => {
    const javaHome = findJavaHome();
    await expect(ensureArtifacts(emptyCache, () => {}, { JAVA_HOME: javaHome, PATH: '/nonexistent' })).rejects.toThrow(/mvn was not found on PATH/);
  });

  it('names the download that failed when Maven cannot resolve the artifacts', async () => {
    // a stand-in for mvn that fails the way Maven does when Central cannot be reached
    const bin = failingMaven(
      '[ERROR] Failed to execute goal on project stack-artifacts: Could not transfer artifact org.apache.kafka:kafka_2.13:pom:3.9.2 from/to central: Connection refused',
    );
    const progress: string[] = [];
    try {
      await expect(ensureArtifacts(emptyCache, (line) => progress.push(line), { JAVA_HOME: findJavaHome(), PATH: `${bin}:/usr/bin:/bin` })).rejects.toThrow(
        /Maven could not resolve the stack artifacts \(exit 1\); is Maven Central reachable\?\n.*Could not transfer artifact org\.apache\.kafka:kafka_2\.13/,
      );
      expect(progress[0]).toMatch(/resolving Kafka .* from Maven Central/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('builds our Elasticsearch plugin when the distribution is there without it, and names the build that failed', async () => {
    const cache = mkdtempSync(path.join(os.tmpdir(), 'stack-plugin-missing-'));
    const { kafkaLibs, elasticsearchHome } = artifactPaths(cache);
    for (const dir of [kafkaLibs, path.join(elasticsearchHome, 'bin'), path.join(elasticsearchHome, 'lib')]) mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(kafkaLibs, `kafka_2.13-${KAFKA_VERSION}.jar`), '');
    writeFileSync(path.join(elasticsearchHome, 'bin', 'elasticsearch'), '');
    const bin = failingMaven('[ERROR] COMPILATION ERROR : SecurityIndexAnalysisPlugin.java: cannot find symbol');
    const progress: string[] = [];
    try {
      await expect(ensureArtifacts(cache, (line) => progress.push(line), { JAVA_HOME: findJavaHome(), PATH: `${bin}:/usr/bin:/bin` })).rejects.toThrow(
        /^Maven could not build the Elasticsearch plugin in stack\/elasticsearch-plugin \(exit 1\).*\n.*cannot find symbol/,
      );
      // the distribution was found, so nothing was downloaded: the plugin build was the first step
      expect(progress[0]).toMatch(/^building the Elasticsearch plugin logplatform-analysis .* into .*plugins\/logplatform-analysis$/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
      rmSync(cache, { recursive: true, force: true });
    }
  });
});

describe('the plugin digest that decides a rebuild', () => {
  it('changes with a file edited or added, and only then', () => {
    const source = mkdtempSync(path.join(os.tmpdir(), 'stack-plugin-digest-'));
    try {
      mkdirSync(path.join(source, 'src'));
      writeFileSync(path.join(source, 'pom.xml'), '<project/>');
      writeFileSync(path.join(source, 'src', 'A.java'), 'class A {}');
      const first = analysisPluginDigest(source);
      expect(analysisPluginDigest(source)).toBe(first);
      writeFileSync(path.join(source, 'src', 'A.java'), 'class A { }');
      const edited = analysisPluginDigest(source);
      expect(edited).not.toBe(first);
      writeFileSync(path.join(source, 'src', 'B.java'), '');
      expect(analysisPluginDigest(source)).not.toBe(edited);
    } finally {
      rmSync(source, { recursive: true, force: true });
    }
  });
});
