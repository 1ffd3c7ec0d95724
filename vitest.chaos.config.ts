import { defineConfig } from 'vitest/config';

// npm run test:chaos: the reliability suite (kills, restarts, faults, full disks, bad input).
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.chaos.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
