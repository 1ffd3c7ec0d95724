/**
 * The tree's import rules, checked by `npm test` (npm run lint:deps). Building blocks (api, limiter, warehouse,
 * lease, redis) know only core and never each other; sync composes them; the CLI and jobs/ sit on top and use
 * each other's and sync's index only; nothing in the product imports tests, benches or devtools/. Tests and benches
 * share helpers only through devtools/, which imports neither. Type-only imports count: a cycle through types is
 * still a cycle.
 */
const block = (name) => ({
  name: `${name}-only-core`,
  comment: `src/${name} is a building block: it imports src/core and itself, nothing else of salesync`,
  severity: 'error',
  from: { path: `^src/${name}/` },
  to: { path: '^(src|jobs|bench|test|devtools)/', pathNot: [`^src/${name}/`, '^src/core/'] },
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'import cycles, type-only ones included, make layers impossible to read in order',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    block('api'),
    block('limiter'),
    block('warehouse'),
    block('lease'),
    block('redis'),
    {
      name: 'core-only-itself',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^(src|jobs|bench|test|devtools)/', pathNot: '^src/core/' },
    },
    {
      name: 'simulator-shares-nothing',
      comment: 'the simulator shares nothing with the client but the spec',
      severity: 'error',
      from: { path: '^src/simulator/' },
      to: { path: '^(src|jobs|bench|test|devtools)/', pathNot: '^src/simulator/' },
    },
    {
      name: 'sync-composes-blocks',
      comment: 'sync composes the building blocks; it knows nothing of who drives it',
      severity: 'error',
      from: { path: '^src/sync/' },
      to: { path: '^(src/(cli|demo|simulator)|jobs|bench|test)/' },
    },
    {
      name: 'jobs-below-cli',
      comment: 'jobs/ is driven by the CLI, never the other way round',
      severity: 'error',
      from: { path: '^jobs/' },
      to: { path: '^(src/cli|bench|test)/' },
    },
    {
      name: 'status-reads-runs',
      comment: "src/status reads the warehouse's runs: core and warehouse types only, light enough for every command",
      severity: 'error',
      from: { path: '^src/status/' },
      to: { path: '^(src|jobs|bench|test|devtools)/', pathNot: ['^src/status/', '^src/core/', '^src/warehouse/types\\.ts$'] },
    },
    {
      name: 'cli-through-jobs-index',
      comment: 'the CLI uses what jobs/ offers (jobs/index.ts), never its internals',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^jobs/', pathNot: '^jobs/index\\.ts$' },
    },
    {
      name: 'upper-layers-through-sync-index',
      comment:
        'the CLI and jobs/ use what sync offers (src/sync/index.ts; progress.ts, which the live display needs without loading DuckDB), never its internals',
      severity: 'error',
      from: { path: '^(src/cli|src/demo|jobs)/' },
      to: { path: '^src/sync/', pathNot: ['^src/sync/index\\.ts$', '^src/sync/progress\\.ts$'] },
    },
    {
      name: 'product-not-tests-or-bench',
      comment: 'what ships needs nothing that only develops it: tests, benches and their shared devtools/',
      severity: 'error',
      from: { path: '^(src|jobs)/' },
      to: { path: '^(bench|test|devtools)/' },
    },
    {
      name: 'test-not-bench',
      comment: 'a helper tests and benches both need lives in devtools/',
      severity: 'error',
      from: { path: '^test/' },
      to: { path: '^bench/' },
    },
    {
      name: 'bench-not-test',
      comment: 'a helper tests and benches both need lives in devtools/',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^test/' },
    },
    {
      name: 'devtools-below-tests-and-bench',
      comment: 'devtools/ serves tests and benches alike, so it imports neither',
      severity: 'error',
      from: { path: '^devtools/' },
      to: { path: '^(bench|test)/' },
    },
    {
      name: 'product-no-dev-deps',
      comment: 'what ships may not need a devDependency at run time',
      severity: 'error',
      from: { path: '^(src|jobs)/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
