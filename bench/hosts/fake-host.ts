/**
 * The hosts bench's upstream, in a process of its own: the tests' fake provider
 * (test/support/fake-upstream.ts), which speaks every host kind's wire, on a free port.
 *
 *   node dist/bench/hosts/fake-host.js DIR
 *
 * Google's token endpoint (the fake's /token) trusts one service account, whose key file it writes
 * in DIR for the gateway's vertex host. Reports `{ url, googleKeyFile }` to its parent over IPC once
 * it listens; stops on SIGTERM, SIGINT, or when the parent goes away (the IPC channel closes), so it
 * never outlives the bench.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeUpstream } from '../../test/support/fake-upstream';
import { testServiceAccount } from '../../test/support/fakes/google-oauth';

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: fake-host.js DIR (where the service account key file goes)');
  const fake = await startFakeUpstream();
  const { key, publicKey } = testServiceAccount(`${fake.url}/token`, 'gateway-bench@bench-project.iam.gserviceaccount.com');
  fake.googleOAuth.trust(key.client_email, publicKey);
  const googleKeyFile = join(dir, 'service-account.json');
  writeFileSync(googleKeyFile, JSON.stringify(key));
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
  const ready = { url: fake.url, googleKeyFile };
  if (process.send) process.send(ready);
  else process.stdout.write(`${JSON.stringify(ready)}\n`);
}

main().catch((error: Error) => {
  process.stderr.write(`bench fake host failed: ${error.message}\n`);
  process.exit(1);
});
