import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config';
import { RedisProjectionStore } from '../../src/projections/redis-projection-store';
import { LogClaimError } from '../../src/runtime/log-claim';
import { CLAIM_RELEASED, CLAIMS_STREAM } from '../../src/runtime/log-claim.decisions';
import { openRuntime } from '../../src/runtime/runtime';
import { createApp } from '../../src/app';
import { listenOn } from '../../src/http/http-adapter';
import { EsdbServer } from '../support/esdb-server/server';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { TEST_HOST_KEYS, testCatalogue, testCatalogueFile } from '../support/gateway';
import { operatorTool } from '../support/operator-tool';
import { type Child, eventually, ROOT, startNode, startService } from '../support/processes';
import { describeWithRedis, testRedisUrl, uniquePrefix } from '../support/redis';
import { tempDir } from '../support/temp';

/**
 * Gateway processes on one EventStoreDB log (the protocol server over gRPC), each with a data
 * directory of its own as on machines of their own, so that nothing but the log is shared: an
 * instance whose read models are in another store than a live claim in the log names is refused at
 * start (runtime/log-claim.ts), as the data directory's lock files refuse it on one machine.
 */

const REFUSAL = (mine: RegExp, theirs: RegExp) =>
  new RegExp(
    `model gateway failed to start: this EventStoreDB log is served with read models in another store: a gateway instance \\(pid \\d+ on [^)]+\\) has ${theirs.source}, ` +
      `its claim renewed [\\d.]+ s ago \\(lease 30 s\\); this one has ${mine.source}\\. Each would admit requests against its own copy of the balances, ` +
      'and together they overdraw\\. Give every instance on one EventStoreDB log the same REDIS_URL and REDIS_PREFIX',
  );
const redisStore = (id: string, prefix: string) => new RegExp(`read models in Redis store ${id} \\(REDIS_PREFIX ${prefix}\\)`);
const IN_PROCESS = /in-process read models \(no REDIS_URL; store [0-9a-f]{32}, of [^)]+\)/;

describeWithRedis('instances on one EventStoreDB log with read models in other stores (protocol server)', () => {
  let server: EsdbServer;
  let fake: FakeUpstream;
  const dirs: Array<{ path: string; cleanup: () => void }> = [];
  const children: Child[] = [];

  beforeAll(async () => {
    server = await EsdbServer.start({ systemEventEvery: 5 });
    fake = await startFakeUpstream();
  });
  afterEach(async () => {
    await Promise.all(
      children.splice(0).map(async (child) => {
        if (child.process.exitCode !== null || child.process.signalCode !== null) return;
        child.process.kill('SIGKILL');
        await child.exited();
      }),
    );
    for (const dir of dirs.splice(0)) dir.cleanup();
    // Each test on a log of its own: the claims of the last one's instances (SIGKILLed) are not its business.
    await server.restart({ empty: true });
  });
  afterAll(async () => {
    await fake.close();
    await server.close();
  });

  /** The environment of an instance on a machine of its own: its own data directory; read models in Redis under `prefix`, or in-process (null). */
  const machine = (prefix: string | null, extra: Record<string, string> = {}): Record<string, string> => {
    const dir = tempDir('esdb-claim');
    dirs.push(dir);
    const catalogue = join(dir.path, 'catalogue.json');
    writeFileSync(catalogue, JSON.stringify(testCatalogueFile(fake)));
    return {
      DATA_DIR: dir.path,
      EVENTSTORE_URL: server.url,
      ...(prefix === null ? { REDIS_URL: '' } : { REDIS_URL: testRedisUrl()!, REDIS_PREFIX: prefix }),
      ...TEST_HOST_KEYS,
      PORT: '0',
      HOST: '127.0.0.1',
      CATALOGUE_PATH: catalogue,
      SIMULATED_HOST_PORT: 'off',
      HOST_BREAKER_FAILURES: '0',
      ...extra,
    };
  };
  const serve = async (env: Record<string, string>) => {
    const started = await startService(env);
    children.push(started.service);
    return started;
  };
  /** A service that must be refused: its exit code and all it said (a null code: it serves). */
  const refused = async (env: Record<string, string>) => {
    const child = startNode(join(ROOT, 'dist/src/main.js'), [], env);
    children.push(child);
    const closed = once(child.process, 'close');
    await eventually(() => child.process.exitCode !== null || /listening on/.test(child.output()), 20_000);
    if (child.process.exitCode !== null) await closed;
    return { code: child.process.exitCode, output: child.output() };
  };
  const healthy = async (base: string) => (await fetch(`${base}/health/ready`)).status;
  /** The id a Redis store keeps of itself under `prefix`. */
  const storeIdOf = async (prefix: string) => {
    const store = await RedisProjectionStore.connect(testRedisUrl()!, prefix, 100, 'log');
    try {
      return await store.storeId();
    } finally {
      await store.close();
    }
  };

  it('refuses a second with another REDIS_PREFIX (exit 1), naming both stores and what to set; the first serves on', async () => {
    const [first, second] = [uniquePrefix('esdb-a'), uniquePrefix('esdb-b')];
    const { base } = await serve(machine(first));
    const run = await refused(machine(second));
    expect(run.code).toBe(1);
    expect(run.output).toMatch(REFUSAL(redisStore(await storeIdOf(second), second), redisStore(await storeIdOf(first), first)));
    expect(await healthy(base)).toBe(200);
  });

  it('starts a second with the same REDIS_URL and REDIS_PREFIX: both serve', async () => {
    const prefix = uniquePrefix('esdb-same');
    const first = await serve(machine(prefix));
    const second = await serve(machine(prefix));
    expect(await healthy(first.base)).toBe(200);
    expect(await healthy(second.base)).toBe(200);
  });

  it('refuses a second with in-process read models beside one (each is a store of its own), and one with Redis beside it', async () => {
    const { base } = await serve(machine(null));
    const inProcess = await refused(machine(null));
    expect(inProcess.code).toBe(1);
    expect(inProcess.output).toMatch(REFUSAL(IN_PROCESS, IN_PROCESS));
    const prefix = uniquePrefix('esdb-beside');
    const withRedis = await refused(machine(prefix));
    expect(withRedis.code).toBe(1);
    expect(withRedis.output).toMatch(REFUSAL(redisStore(await storeIdOf(prefix), prefix), IN_PROCESS));
    expect(await healthy(base)).toBe(200);
  });

  it('serves again on its own data directory after a SIGKILL (the same in-process store), at once', async () => {
    const env = machine(null);
    const { service } = await serve(env);
    service.process.kill('SIGKILL');
    await service.exited();
    const { base } = await serve(env);
    expect(await healthy(base)).toBe(200);
  });

  it('after the first is SIGKILLed (no release), another store is refused until its lease has passed, then serves', async () => {
    const LEASE = { SERVING_LEASE_MS: '3000' };
    const { service } = await serve(machine(uniquePrefix('esdb-killed'), LEASE));
    service.process.kill('SIGKILL');
    await service.exited();
    const killedAt = Date.now();
    const other = loadConfig(machine(uniquePrefix('esdb-next'), LEASE));
    // At once: the dead instance's last renewal is at most a third of its lease old.
    await expect(openRuntime(other, { serving: true })).rejects.toBeInstanceOf(LogClaimError);
    const opening = { runtime: null as Awaited<ReturnType<typeof openRuntime>> | null };
    await eventually(
      async () => {
        opening.runtime = await openRuntime(other, { serving: true }).catch((error: Error) => {
          if (!(error instanceof LogClaimError)) throw error;
          return null;
        });
        return opening.runtime !== null;
      },
      20_000,
      200,
    );
    // Its last renewal was at most a third of the lease before the kill; its claim is live for the lease and a second's margin.
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(2_500);
    await opening.runtime!.close();
  });

  it('lets another store start at once after the first stopped cleanly (SIGTERM: its release is in the log)', async () => {
    const { service } = await serve(machine(uniquePrefix('esdb-stopped')));
    service.process.kill('SIGTERM');
    expect(await service.exited()).toBe(0);
    const released = server.log.stream(CLAIMS_STREAM).filter((event) => event.type === CLAIM_RELEASED);
    expect(released).toHaveLength(1);
    const { base } = await serve(machine(uniquePrefix('esdb-after')));
    expect(await healthy(base)).toBe(200);
  });

  it('admits nothing while its claim goes unrenewed past its lease (the log away): 503 and not ready, saying why; serves again once renewed', async () => {
    const runtime = await openRuntime(loadConfig(machine(uniquePrefix('esdb-lapse'), { SERVING_LEASE_MS: '1500' })), {
      serving: true,
    });
    const app = await createApp(runtime, { logger: false, catalogue: testCatalogue(fake) });
    try {
      await app.listen(listenOn(0, '127.0.0.1'));
      const base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
      const ask = () =>
        fetch(`${base}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer sk-svc-unknown' },
          body: JSON.stringify({ model: 'test/gpt', messages: [{ role: 'user', content: 'Hi' }] }),
        });
      expect(runtime.servingRefusal()).toBeNull();
      await server.stop();
      await eventually(() => runtime.servingRefusal() !== null, 10_000);
      const ready = await fetch(`${base}/health/ready`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { reasons: string[] }).reasons).toContainEqual(
        expect.stringMatching(
          /^serving claim: its claim in the event log on its read models' store was last renewed [\d.]+ s ago \(lease 1\.5 s\)/,
        ),
      );
      const answer = await ask();
      expect(answer.status).toBe(503);
      expect(((await answer.json()) as { error: { message: string } }).error.message).toMatch(
        /cannot renew its claim on its balances in the event log, so it admits nothing/,
      );
      await server.restart();
      await eventually(() => runtime.servingRefusal() === null, 15_000);
      // Admitted again: an unknown key is a 401 once more, not a 503.
      expect((await ask()).status).toBe(401);
    } finally {
      await app.close();
      await runtime.close();
    }
  });

  it('refuses `projections rebuild` with another store while an instance serves (exit 1, saying what to do); runs with its store', async () => {
    const prefix = uniquePrefix('esdb-rebuild');
    await serve(machine(prefix));
    const elsewhere = await operatorTool(machine(uniquePrefix('esdb-rebuild-other')), ['projections', 'rebuild']);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toMatch(
      /^model-gateway: not rebuilt: this EventStoreDB log is served with read models in another store: a gateway instance .*; this tool has read models in Redis store [0-9a-f]{32} .*so this rebuild would not be of the read models it reads\. Run the tool with the REDIS_URL and REDIS_PREFIX of the service/,
    );
    const there = await operatorTool(machine(prefix), ['projections', 'rebuild']);
    expect(there.code).toBe(0);
    expect(there.stdout).toMatch(/rebuilt redis read models/);
  });
});
