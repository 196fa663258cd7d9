/**
 * Two projects: `unit` (files named *.unit.spec.ts: pure rules, no I/O, no Redis — `npm run
 * test:unit`) and `integration` (everything else: real SQLite, Redis, HTTP and processes).
 * `npm test` runs both.
 * @type {import('jest').Config}
 */
const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    {
      jsc: {
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
        target: 'es2022',
      },
      module: { type: 'commonjs' },
    },
  ],
};

/**
 * Jest's node environment, which also stops what a test file left running in its worker's process
 * and could not stop itself (jest-circus's AsyncLocalStorage, prom-client's GC observer and delay
 * histogram): left, they made each later file in the worker slower (test/support/node-environment.js).
 */
const testEnvironment = '<rootDir>/test/support/node-environment.js';

module.exports = {
  // A guard against a hang, not a measure of speed: the agent CLIs' and the operator tool's tests
  // spawn processes that take 10 s here with two workers sharing two cores, more on a slower machine.
  testTimeout: 60000,
  // Most suites wait on processes, sockets, Redis and the disk: a worker per core, two at least. Jest's
  // default (cores − 1) runs a 2-core machine's suites one at a time, with a core idle half the run.
  maxWorkers: Math.max(2, require('node:os').availableParallelism() - 1),
  projects: [
    {
      displayName: 'unit',
      testEnvironment,
      roots: ['<rootDir>/test'],
      testMatch: ['**/*.unit.spec.ts'],
      transform,
    },
    {
      displayName: 'integration',
      testEnvironment,
      roots: ['<rootDir>/test'],
      testMatch: ['**/*.spec.ts'],
      testPathIgnorePatterns: ['\\.unit\\.spec\\.ts$'],
      transform,
      globalSetup: '<rootDir>/test/support/global-setup.js',
      globalTeardown: '<rootDir>/test/support/global-teardown.js',
    },
  ],
  // No forceExit: every suite closes what it opens, and runs end by themselves (checked with
  // --detectOpenHandles and by listing what is left at the global teardown, in band and with
  // workers). A run that stays alive has leaked a handle: look with --detectOpenHandles.
};
