import { defineConfig } from 'vitest/config';

// npm run test:chaos: the reliability suite (kills, restarts, faults, full disks, bad input).
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.chaos.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most trials wait on child processes, servers and timers: two files side by side take about 60 % of the time
    // one after the other does, with every trial still passing.
    maxWorkers: 2,
  },
});
