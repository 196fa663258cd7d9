/**
 * Dependency rules (`npm run lint:deps`). Folders depend one way (surfaces → inference → hosts,
 * ledger, catalogue, identity; ledger and identity → eventstore; hosts → canonical): a cycle
 * between two folders, or between two modules, fails the check.
 */
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
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/dashboard/web/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
