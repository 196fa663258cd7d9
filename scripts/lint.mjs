// `npm run lint`: ESLint (type-aware), Prettier, the type check of src, test and bench, and the
// dependency rules between folders. Each check is one process on one core, and ESLint alone takes
// as long as the other three together: they run side by side, a check per core (two at least),
// the longest first, each one's output printed whole once it is done. Fails if any check fails,
// naming each that did.
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Longest first: the others share the second core while ESLint takes the first. */
const checks = [
  ['eslint', ['.']],
  ['tsc', ['--noEmit', '-p', 'tsconfig.json']],
  ['prettier', ['--check', '.']],
  ['npm', ['run', '--silent', 'lint:deps']],
];

/** Runs `command` in the repository with its tools on PATH (as npm runs a script): its exit code and everything it printed. */
function run([command, args]) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env: { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}${delimiter}${process.env.PATH}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ code: 1, output: `${output}${error.message}\n` }));
    child.on('close', (code, signal) => resolve({ code: code ?? 1, output: signal ? `${output}killed by ${signal}\n` : output }));
  });
}

const failed = [];
let next = 0;
async function worker() {
  while (next < checks.length) {
    const check = checks[next++];
    const name = [check[0], ...check[1]].join(' ');
    const { code, output } = await run(check);
    process.stdout.write(`> ${name}\n${output}`);
    if (code !== 0) failed.push(`${name} (exit ${code})`);
  }
}
await Promise.all(Array.from({ length: Math.min(checks.length, Math.max(2, availableParallelism())) }, worker));
if (failed.length > 0) {
  process.stderr.write(`lint failed: ${failed.join(', ')}\n`);
  process.exit(1);
}
