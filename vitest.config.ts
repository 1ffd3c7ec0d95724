import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The chaos suite has its own command (npm run test:chaos) and config.
    exclude: ['test/chaos/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Native DuckDB and real servers: separate processes keep one test file's handles out of another's.
    pool: 'forks',
    // A worker process runs many files: starting and loading a fresh one per file cost about a tenth of the suite.
    // Every file closes its own servers, files and timers, so none leaks into the next.
    isolate: false,
    // Most tests wait on servers, child processes and timers rather than the CPU: twice the cores keeps both busy.
    maxWorkers: 4,
  },
});
