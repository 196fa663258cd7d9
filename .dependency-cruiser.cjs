/**
 * Dependency rules (`npm run lint:deps`). Folders depend one way (surfaces → inference → hosts,
 * ledger, catalogue, identity; ledger and identity → eventstore; hosts → canonical): a cycle
 * between two folders, or between two modules, fails the check, and so does an import against
 * the direction the rules below name.
 */

/** The pure rules: deciders and decision files, events, money. They decide; they do no I/O. */
const PURE_RULES = [
  '\\.(decider|decisions|events)\\.ts$',
  '^src/ledger/money\\.ts$',
  // The pipeline's pure decisions: what to hold, how the attempt goes, what to bill.
  '^src/inference/(admission|attempt|settlement|usage-check|tokens)\\.ts$',
  // The read models' folds: events to writes, no store.
  '^src/projections/(folds|writes)\\.ts$',
];

/** What does I/O or frames it: the log's and read models' stores, the network, the disk, Nest. */
const ADAPTERS = [
  '^src/eventstore/(sqlite|eventstoredb|timed-event-store)',
  // The stores and the projector; the folds, their writes and the read side's types are pure.
  '^src/projections/(?!(folds|writes|read-models)\\.ts$)',
  '^src/.+/redis[^/]*$',
  '^src/hosts/transport',
  '^src/http/http-adapter',
  '(^|/)node_modules/(redis|@redis/|better-sqlite3|@eventstore/|undici|fastify|@fastify/|@nestjs/)',
];
const IO_CORE_MODULES = '^(node:)?(fs|http|https|http2|net|tls|dgram|child_process|worker_threads)(/|$)';

module.exports = {
  forbidden: [
    {
      name: 'no-folder-cycles',
      comment: 'Two folders import each other, directly or through others.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-module-cycles',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'surfaces-know-no-host',
      comment:
        'A surface translates its wire format to the canonical request and back; which host serves is the pipeline’s business.',
      severity: 'error',
      from: { path: '^src/surfaces/' },
      to: { path: '^src/hosts/' },
    },
    {
      name: 'hosts-know-no-billing',
      comment:
        'A host kind translates canonical requests and replies; it knows nothing of the ledger or of the pipeline that bills.',
      severity: 'error',
      from: { path: '^src/hosts/' },
      to: { path: '^src/(ledger|inference)/' },
    },
    {
      name: 'pure-rules-import-no-adapter',
      comment: 'Deciders, decisions, events and money are pure: no store, no network, no disk, no framework.',
      severity: 'error',
      from: { path: PURE_RULES },
      to: { path: ADAPTERS },
    },
    {
      name: 'pure-rules-use-no-io-module',
      comment: 'Deciders, decisions, events and money are pure: no disk, no network, no threads.',
      severity: 'error',
      from: { path: PURE_RULES },
      to: { dependencyTypes: ['core'], path: IO_CORE_MODULES },
    },
    {
      name: 'canonical-imports-nothing',
      comment: 'The canonical request and events are what every other folder translates to: they depend on none of them.',
      severity: 'error',
      from: { path: '^src/canonical/' },
      to: { path: '^src/', pathNot: '^src/canonical/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/dashboard/web/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
