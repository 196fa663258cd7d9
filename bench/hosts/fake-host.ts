/**
 * The hosts bench's upstream, in a process of its own: the tests' fake provider
 * (test/support/fake-upstream.ts), which speaks every host kind's wire, on a free port.
 *
 *   node dist/bench/hosts/fake-host.js
 *
 * Reports `{ url }` to its parent over IPC once it listens; stops on SIGTERM, SIGINT, or when the
 * parent goes away (the IPC channel closes), so it never outlives the bench.
 */
import { startFakeUpstream } from '../../test/support/fake-upstream';

async function main(): Promise<void> {
  const fake = await startFakeUpstream();
  // The fake keeps every request for the tests to read; a bench run sends tens of thousands and reads none.
  const forget = setInterval(() => (fake.requests.length = 0), 1000);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    clearInterval(forget);
    const force = setTimeout(() => process.exit(0), 2000);
    force.unref();
    void fake.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
  if (process.send) process.send({ url: fake.url });
  else process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
}

main().catch((error: Error) => {
  process.stderr.write(`bench fake host failed: ${error.message}\n`);
  process.exit(1);
});
