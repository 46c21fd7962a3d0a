import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // two cores: more workers only contend for the CPU the JVMs need
    maxWorkers: 2,
    reporters: ['default'],
  },
});
