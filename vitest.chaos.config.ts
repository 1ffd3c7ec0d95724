import { defineConfig } from 'vitest/config';

// npm run test:chaos: the reliability suite (kills, restarts, faults, full disks, bad input).
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.chaos.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most trials wait on child processes, servers and timers (the limiter's alone waits 75 s): three files side by
    // side keep two cores busy, where two left one idle through that wait, with every trial still passing.
    maxWorkers: 3,
  },
});
