import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // two cores: more workers only contend for the CPU the JVMs need
    maxWorkers: 2,
    projects: [
      // pure code and file checks: no servers, seconds to run (`npm run test:unit`)
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts', 'test/deploy/**/*.test.ts'] } },
      // the real Kafka and Elasticsearch, started once by the global setup
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'], globalSetup: ['test/global-setup.ts'] } },
      // faults injected into servers of the suite's own (started, stopped and restarted by each file):
      // FAULTS_EVENTS sets the ingest size, 20,000 here and 200,000 in `npm run test:faults`
      { extends: true, test: { name: 'faults', include: ['test/faults/**/*.test.ts'] } },
      // its own three-node Kafka and Elasticsearch clusters, started by the test: minutes, so not part of `npm test` (`npm run test:cluster`)
      { extends: true, test: { name: 'cluster', include: ['test/cluster/**/*.test.ts'] } },
    ],
  },
});
