import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Native DuckDB and real servers: separate processes keep one test file's handles out of another's.
    pool: 'forks',
  },
});
