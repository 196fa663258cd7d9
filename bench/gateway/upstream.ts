/**
 * The bench's upstream, in a process of its own: the built-in simulated host on a free port.
 *
 *   node dist/bench/gateway/upstream.js [--first-token-ms N] [--tokens-per-second N]
 *
 * Reports `{ port }` to its parent over IPC once it listens; stops on SIGTERM, SIGINT, or when
 * the parent goes away (the IPC channel closes), so it never outlives the bench.
 */
import { startSimulatedUpstream } from '../../src/simulated-upstream/simulated-upstream';

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number ≥ 0`);
  return value;
}

async function main(): Promise<void> {
  const host = await startSimulatedUpstream({
    port: 0,
    firstTokenMs: option('--first-token-ms', 0),
    tokensPerSecond: option('--tokens-per-second', 0),
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(0), 2000);
    force.unref();
    void host.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
  const port = Number(new URL(host.url).port);
  if (process.send) process.send({ port });
  else process.stdout.write(`${JSON.stringify({ port })}\n`);
}

main().catch((error: Error) => {
  process.stderr.write(`bench upstream failed: ${error.message}\n`);
  process.exit(1);
});
