import { ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');

export interface Child {
  process: ChildProcess;
  /** Resolves when the child has printed a line equal to (or starting with) `text`. */
  waitForLine(text: string, timeoutMs?: number): Promise<string>;
  output(): string;
  exited(): Promise<number | null>;
}

/** Starts a node process and watches its output line by line (no sleeps: we wait for lines). */
export function startNode(script: string, args: string[], env: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: ROOT,
    // EVENTSTORE_URL in the test run's environment is for the EventStoreDB contract suite: a
    // child opens the log its test names (its DATA_DIR's SQLite file unless it says otherwise).
    env: { ...process.env, EVENTSTORE_URL: '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  const lines: string[] = [];
  const waiters: Array<{ text: string; resolve: (line: string) => void }> = [];
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    const parts = out.split('\n');
    while (parts.length > 1 + lines.length) lines.push(parts[lines.length]);
    for (const w of [...waiters]) {
      const hit = lines.find((l) => l.startsWith(w.text));
      if (hit !== undefined) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(hit);
      }
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  return {
    process: child,
    output: () => out,
    exited: () => exit,
    waitForLine(text, timeoutMs = 20_000) {
      const hit = lines.find((l) => l.startsWith(text));
      if (hit !== undefined) return Promise.resolve(hit);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no line "${text}" within ${timeoutMs} ms; output:\n${out}`)), timeoutMs);
        waiters.push({
          text,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
        void exit.then((code) => {
          clearTimeout(timer);
          reject(new Error(`process exited (${code}) before printing "${text}"; output:\n${out}`));
        });
      });
    },
  };
}

/** Polls `check` until it returns true (for facts only visible by looking, e.g. in another process). */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 10_000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The service (dist/src/main.js) as its own process with `env`: the child, and its base URL once it listens. */
export async function startService(env: Record<string, string>): Promise<{ service: Child; base: string }> {
  const service = startNode(join(ROOT, 'dist/src/main.js'), [], env);
  let base: string | undefined;
  await eventually(() => (base = /listening on (http:\/\/[^\s]+)/.exec(service.output())?.[1]) !== undefined, 20_000);
  return { service, base: base! };
}
