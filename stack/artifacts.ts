import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { StackError } from './server-process.ts';
import { ELASTICSEARCH_VERSION, KAFKA_VERSION } from './versions.ts';
import { repositoryRoot } from '../shared/config.ts';

export interface StackArtifacts {
  javaHome: string;
  kafkaLibs: string;
  elasticsearchHome: string;
}

/** The JDK that runs both servers: JAVA_HOME when set, else the java on PATH. */
export function findJavaHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.JAVA_HOME;
  if (fromEnv && existsSync(path.join(fromEnv, 'bin', 'java'))) return fromEnv;
  const which = spawnSync('/bin/sh', ['-c', 'command -v java'], { encoding: 'utf8', env });
  const javaPath = (which.stdout ?? '').trim();
  if (which.status !== 0 || javaPath === '') {
    throw new StackError('java was not found on PATH and JAVA_HOME is not set: install a JDK 17 or newer (apt-get install openjdk-17-jdk-headless)');
  }
  const home = path.dirname(path.dirname(realpathSync(javaPath)));
  const version = spawnSync(path.join(home, 'bin', 'java'), ['-version'], { encoding: 'utf8' });
  const major = /version "(\d+)/.exec(version.stderr)?.[1];
  if (major === undefined || Number(major) < 17) {
    throw new StackError(`Elasticsearch ${ELASTICSEARCH_VERSION} needs Java 17 or newer; ${javaPath} reports: ${version.stderr.split('\n')[0]}`);
  }
  return home;
}

export function artifactPaths(cacheDir: string): { kafkaLibs: string; elasticsearchHome: string } {
  return {
    kafkaLibs: path.join(cacheDir, `kafka-${KAFKA_VERSION}`, 'libs'),
    elasticsearchHome: path.join(cacheDir, `elasticsearch-${ELASTICSEARCH_VERSION}`),
  };
}

/**
 * Our plugin with the analysis components the .security index needs (stack/elasticsearch-plugin).
 * It is installed in every node, secured or not: unsecured nodes never use its three components.
 */
export const ANALYSIS_PLUGIN = 'logplatform-analysis';
const analysisPluginSource = path.join(repositoryRoot, 'stack', 'elasticsearch-plugin');

function analysisPluginPaths(cacheDir: string): { pluginDir: string; buildDir: string; stamp: string } {
  const buildDir = path.join(cacheDir, 'elasticsearch-plugin-build');
  return {
    pluginDir: path.join(artifactPaths(cacheDir).elasticsearchHome, 'plugins', ANALYSIS_PLUGIN),
    buildDir,
    stamp: path.join(buildDir, 'source.sha256'),
  };
}

/** Digest of the plugin's source files: an edited plugin is rebuilt on the next start. */
export function analysisPluginDigest(sourceDir: string = analysisPluginSource): string {
  const hash = createHash('sha256');
  const files = readdirSync(sourceDir, { recursive: true, encoding: 'utf8' })
    .filter((file) => statSync(path.join(sourceDir, file)).isFile())
    .sort();
  for (const file of files)
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(path.join(sourceDir, file)))
      .update('\0');
  return hash.digest('hex');
}

function analysisPluginCurrent(cacheDir: string): boolean {
  const { pluginDir, stamp } = analysisPluginPaths(cacheDir);
  return (
    existsSync(path.join(pluginDir, 'plugin-descriptor.properties')) &&
    existsSync(path.join(pluginDir, `${ANALYSIS_PLUGIN}-1.jar`)) &&
    existsSync(stamp) &&
    readFileSync(stamp, 'utf8') === analysisPluginDigest()
  );
}

function artifactsPresent(cacheDir: string): boolean {
  const { kafkaLibs, elasticsearchHome } = artifactPaths(cacheDir);
  return (
    existsSync(path.join(kafkaLibs, `kafka_2.13-${KAFKA_VERSION}.jar`)) &&
    existsSync(path.join(elasticsearchHome, 'bin', 'elasticsearch')) &&
    existsSync(path.join(elasticsearchHome, 'lib'))
  );
}

/**
 * Resolves the Kafka broker jars and the Elasticsearch distribution from Maven Central into cacheDir
 * (a private Maven repository lives there too), once; later runs find them and skip Maven.
 */
export async function ensureArtifacts(
  cacheDirSetting: string,
  progress: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<StackArtifacts> {
  // Maven resolves a relative folder against the pom's, not ours
  const cacheDir = path.resolve(cacheDirSetting);
  const javaHome = findJavaHome(env);
  if (!artifactsPresent(cacheDir)) {
    const mvn = spawnSync('/bin/sh', ['-c', 'command -v mvn'], { encoding: 'utf8', env });
    if (mvn.status !== 0) {
      throw new StackError('mvn was not found on PATH: install Apache Maven (apt-get install maven); it downloads Kafka and Elasticsearch from Maven Central');
    }
    progress(`resolving Kafka ${KAFKA_VERSION} and Elasticsearch ${ELASTICSEARCH_VERSION} from Maven Central into ${cacheDir} (about 180 MB, first run only)`);
    await runMaven(cacheDir, javaHome, progress, env, {
      pom: path.join(repositoryRoot, 'stack', 'pom.xml'),
      goal: 'generate-resources',
      failure: 'Maven could not resolve the stack artifacts',
    });
    if (!artifactsPresent(cacheDir)) {
      throw new StackError(`Maven finished but the artifacts are not in ${cacheDir}; see the Maven output above`);
    }
    progress('artifacts ready');
  }
  if (!analysisPluginCurrent(cacheDir)) await buildAnalysisPlugin(cacheDir, javaHome, progress, env);
  return { javaHome, ...artifactPaths(cacheDir) };
}

/** Compiles the plugin against the Elasticsearch and Lucene jars from Maven Central and installs it in the distribution. */
async function buildAnalysisPlugin(cacheDir: string, javaHome: string, progress: (line: string) => void, env: NodeJS.ProcessEnv): Promise<void> {
  const { pluginDir, buildDir, stamp } = analysisPluginPaths(cacheDir);
  progress(`building the Elasticsearch plugin ${ANALYSIS_PLUGIN} (the analysis components the .security index needs) into ${pluginDir}`);
  // a jar left from an older build would load beside the new one
  rmSync(pluginDir, { recursive: true, force: true });
  await runMaven(cacheDir, javaHome, progress, env, {
    pom: path.join(analysisPluginSource, 'pom.xml'),
    goal: 'package',
    failure: `Maven could not build the Elasticsearch plugin in ${path.relative(repositoryRoot, analysisPluginSource)}`,
    extraArgs: [`-Dplugin.dir=${pluginDir}`],
  });
  mkdirSync(buildDir, { recursive: true });
  writeFileSync(stamp, analysisPluginDigest());
  if (!analysisPluginCurrent(cacheDir)) {
    throw new StackError(`Maven finished but the plugin is not in ${pluginDir}; see the Maven output above`);
  }
}

interface MavenRun {
  pom: string;
  goal: string;
  /** The start of the error message when Maven fails. */
  failure: string;
  extraArgs?: string[];
}

async function runMaven(cacheDir: string, javaHome: string, progress: (line: string) => void, env: NodeJS.ProcessEnv, run: MavenRun): Promise<void> {
  const args = [
    '-B',
    '-f',
    run.pom,
    `-Dmaven.repo.local=${path.join(cacheDir, 'm2')}`,
    `-Dstack.cache=${cacheDir}`,
    `-Dkafka.version=${KAFKA_VERSION}`,
    `-Delasticsearch.version=${ELASTICSEARCH_VERSION}`,
    ...(run.extraArgs ?? []),
    run.goal,
  ];
  const maven = spawn('mvn', args, { env: { ...env, JAVA_HOME: javaHome }, stdio: ['ignore', 'pipe', 'pipe'] });
  const transcript: string[] = [];
  let downloaded = 0;
  let bytes = 0;
  const onLine = (line: string) => {
    transcript.push(line);
    const done = /Downloaded from \S+: (\S+) \(([\d.]+) (B|kB|MB)/.exec(line);
    if (done) {
      downloaded += 1;
      const size = Number(done[2]) * ({ B: 1, kB: 1e3, MB: 1e6 } as Record<string, number>)[done[3]!]!;
      bytes += size;
      // Big files get their own line; small ones are summarised every 25 files.
      if (size > 5e6 || downloaded % 25 === 0) {
        progress(`downloaded ${downloaded} files, ${(bytes / 1e6).toFixed(1)} MB (latest: ${path.basename(done[1]!)})`);
      }
    }
  };
  createInterface({ input: maven.stdout! }).on('line', onLine);
  createInterface({ input: maven.stderr! }).on('line', onLine);
  const code = await new Promise<number | null>((resolve, reject) => {
    maven.on('error', reject);
    maven.on('exit', resolve);
  });
  if (code !== 0) {
    const errors = transcript
      .filter((line) => line.includes('ERROR'))
      .slice(0, 8)
      .join('\n');
    throw new StackError(`${run.failure} (exit ${code}); is Maven Central reachable?\n${errors}`);
  }
  progress(`downloaded ${downloaded} files, ${(bytes / 1e6).toFixed(1)} MB`);
}
