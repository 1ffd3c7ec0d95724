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
  },
});
