import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { createClient } from 'redis';
import { eventually } from './processes';

/**
 * A Redis of a test's own (a separate redis-server on a free port, nothing kept on disk), to stop
 * under a gateway: never the shared one the other tests use.
 */

export const hasRedisServer = (() => {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** A port nothing listens on: one the OS gave out and took back. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });

/** A redis-server on `port`, once it answers. */
export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  await eventually(async () => {
    const client = createClient({ url: `redis://127.0.0.1:${port}`, socket: { reconnectStrategy: false } });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.ping();
      return true;
    } catch {
      return false;
    } finally {
      if (client.isOpen) await client.close();
    }
  }, 10_000);
  return child;
}

/** Kills it (SIGKILL: as a crash), once it has exited. */
export async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}
