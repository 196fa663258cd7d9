import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ToWriter, WriterOptions } from './sqlite-writer.protocol';

/** The writer thread; what may be posted to it is typed (its answers: `FromWriter`). */
export interface WriterThread extends Worker {
  postMessage(message: ToWriter): void;
}

const SCRIPT = 'sqlite-writer.worker.js';

/**
 * Where the writer thread's script is. A worker thread runs JavaScript only, so it is always
 * tsc's output for sqlite-writer.worker.ts:
 * - loaded from dist/ (the server, the operator tool, the benches, the processes tests start),
 *   this module is compiled too and the script is its sibling;
 * - loaded from the TypeScript sources (jest compiles each module in memory and writes no .js),
 *   it is the same script in dist/ (tsconfig: rootDir ".", outDir "dist"), which `npm run build`
 *   makes: `npm test` builds first, and the suites need dist/ anyway for the processes they
 *   start. So the writer under test is the one that ships; after changing it, build, then test.
 * (A bootstrap compiling the .ts inside the worker was tried instead: @swc/core's native binding
 * crashes the process when a second worker thread loads it, and TypeScript's own compiler costs
 * about 250 ms per thread.)
 */
function scriptPath(): string {
  if (__filename.endsWith('.js')) return join(__dirname, SCRIPT);
  const compiled = join(__dirname, '..', '..', 'dist', 'src', 'eventstore', SCRIPT);
  if (!existsSync(compiled)) throw new Error(`the event log writer is not built (${compiled}): run npm run build`);
  return compiled;
}

/** Starts the log's writer thread (see sqlite-writer.worker.ts). */
export function startWriter(options: WriterOptions): WriterThread {
  return new Worker(scriptPath(), { workerData: options });
}
