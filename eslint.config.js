// Lint: ESLint's and typescript-eslint's recommended rules over the whole tree, run by `npm test`.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'bench/results/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: globals.node },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Black-box tests of the simulator's HTTP answers: bodies are untyped JSON, read field by field.
    files: ['test/simulator/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
