import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadConfig } from '../../src/config/config';
import { RedisProjectionStore } from '../../src/projections/redis-projection-store';
import { openRuntime } from '../../src/runtime/runtime';
import { claimStore, StoreClaimError } from '../../src/runtime/serving-claim';
import { operatorTool } from '../support/operator-tool';
import { type Child, eventually, ROOT, startNode, startService } from '../support/processes';
import { freePort, hasRedisServer, startRedis, stopRedis } from '../support/own-redis';
import { uniquePrefix } from '../support/redis';
import { tempDir } from '../support/temp';

/**
 * Instances serving one data directory with read models in Redis must use one store: with two, each
 * admits requests against its own balances and together they overdraw. The store is named by an id
 * kept in it, whatever its URL's spelling (runtime/serving-claim.ts, claimStore).
 */
const storeLocks = (dir: string) => readdirSync(dir).filter((name) => /^serving-[0-9a-f]{32}\.lock$/.test(name));

describe('claims of two stores on one data directory', () => {
  const dir = tempDir('store-claim');
  afterAll(() => dir.cleanup());
  const [a, b] = ['a'.repeat(32), 'b'.repeat(32)];

  it('refuses the second store while the first is claimed; takes it once the first is released (its lock file, left, holds nothing)', () => {
    const first = claimStore(dir.path, a);
    try {
      expect(() => claimStore(dir.path, b)).toThrow(StoreClaimError);
      expect(() => claimStore(dir.path, b)).toThrow(/another Redis store .*serving-a{32}\.lock.*same REDIS_URL and REDIS_PREFIX/);
      // The same store: together.
      claimStore(dir.path, a).release();
    } finally {
      first.release();
    }
    const second = claimStore(dir.path, b);
    expect(storeLocks(dir.path).sort()).toEqual([`serving-${a}.lock`, `serving-${b}.lock`]);
    second.release();
  });

  it('two starting together: the one that looks second sees the other, which took its own lock before looking', () => {
    // The first has taken its own lock and has not looked yet (as claimStore does, first).
    const firstOwn = new Database(join(dir.path, `serving-${a}.lock`), { timeout: 0 });
    firstOwn.pragma('locking_mode = EXCLUSIVE');
    firstOwn.prepare('SELECT count(*) FROM sqlite_master').get();
    try {
      // The second takes its own and looks: refused.
      expect(() => claimStore(dir.path, b)).toThrow(StoreClaimError);
    } finally {
      firstOwn.close();
    }
    // The first looks in turn: the refused one holds nothing.
    claimStore(dir.path, a).release();
  });
});

(hasRedisServer ? describe : describe.skip)('a store id kept in Redis', () => {
  let redis: ChildProcess;
  let url: string;
  beforeAll(async () => {
    const port = await freePort();
    redis = await startRedis(port);
    url = `redis://127.0.0.1:${port}`;
  });
  afterAll(() => stopRedis(redis));

  it('is one for a server and prefix, however the URL is spelled; another for another prefix; kept by a reset', async () => {
    const prefix = uniquePrefix('store-id');
    const stores = await Promise.all(
      [url, url.replace('127.0.0.1', 'localhost'), url].map((target, i) =>
        RedisProjectionStore.connect(target, i < 2 ? prefix : uniquePrefix('store-id-other'), 100, 'log'),
      ),
    );
    try {
      const [first, respelled, otherPrefix] = await Promise.all(stores.map((store) => store.storeId()));
      expect(first).toMatch(/^[0-9a-f]{32}$/);
      expect(respelled).toBe(first);
      expect(otherPrefix).not.toBe(first);
      await stores[0].reset();
      expect(await stores[1].storeId()).toBe(first);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it('lost alone (the read models kept), is put back by a serving instance, over one another instance set meanwhile', async () => {
    const dir = tempDir('store-id-lost');
    const runtime = await openRuntime(
      loadConfig({ DATA_DIR: dir.path, REDIS_URL: url, REDIS_PREFIX: uniquePrefix('lost'), SIMULATED_HOST_PORT: 'off' }),
      { serving: true },
    );
    try {
      const id = await (runtime.projections as RedisProjectionStore).storeId();
      const key = `${runtime.config.redisPrefix}store-id`;
      await runtime.redis!.del(key);
      // An instance starting now would set its own (and be refused: this one's lock file is held).
      await runtime.redis!.set(key, 'f'.repeat(32));
      await eventually(async () => (await runtime.redis!.get(key)) === id);
    } finally {
      await runtime.close();
      dir.cleanup();
    }
  });

  it('is written again by the rebuild after Redis was emptied under a serving instance: instances started next join it', async () => {
    const dir = tempDir('store-id-emptied');
    const runtime = await openRuntime(
      loadConfig({ DATA_DIR: dir.path, REDIS_URL: url, REDIS_PREFIX: uniquePrefix('emptied'), SIMULATED_HOST_PORT: 'off' }),
      { serving: true },
    );
    try {
      const id = await (runtime.projections as RedisProjectionStore).storeId();
      await runtime.redis!.flushAll();
      // The projector finds the read models gone (it looks every second) and rebuilds them.
      await eventually(async () => (await runtime.redis!.get(`${runtime.config.redisPrefix}store-id`)) === id);
    } finally {
      await runtime.close();
      dir.cleanup();
    }
  });
});

(hasRedisServer ? describe : describe.skip)('services on one data directory with read models in two Redis stores', () => {
  const redises: ChildProcess[] = [];
  const urls: string[] = [];
  const children: Child[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      redises.push(await startRedis(port));
      urls.push(`redis://127.0.0.1:${port}`);
    }
  });
  afterEach(async () => {
    await Promise.all(
      children.splice(0).map(async (child) => {
        if (child.process.exitCode !== null || child.process.signalCode !== null) return;
        child.process.kill('SIGTERM');
        await child.exited();
      }),
    );
  });
  afterAll(() => Promise.all(redises.map(stopRedis)));

  const env = (dataDir: string, redisUrl: string, prefix: string) => ({
    DATA_DIR: dataDir,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: prefix,
    PORT: '0',
    SIMULATED_HOST_PORT: 'off',
  });
  const serve = async (vars: Record<string, string>) => {
    const started = await startService(vars);
    children.push(started.service);
    return started;
  };
  /** A service that must be refused: its exit code and all it said (a null code: it serves). */
  const refused = async (vars: Record<string, string>) => {
    const child = startNode(join(ROOT, 'dist/src/main.js'), [], vars);
    children.push(child);
    const closed = once(child.process, 'close');
    await eventually(() => child.process.exitCode !== null || /listening on/.test(child.output()), 20_000);
    if (child.process.exitCode !== null) await closed;
    return { code: child.process.exitCode, output: child.output() };
  };
  const REFUSAL =
    /model gateway failed to start: a gateway instance is already serving from .* with its read models in another Redis store .*Give every instance of one DATA_DIR the same REDIS_URL and REDIS_PREFIX/;

  it('refuses a second on another Redis (exit 1, saying what to do); the first keeps serving', async () => {
    const dir = tempDir('stores-two-redis');
    try {
      const prefix = uniquePrefix('stores');
      const { base } = await serve(env(dir.path, urls[0], prefix));
      const second = await refused(env(dir.path, urls[1], prefix));
      expect(second.code).toBe(1);
      expect(second.output).toMatch(REFUSAL);
      expect((await fetch(`${base}/health`)).status).toBe(200);
    } finally {
      dir.cleanup();
    }
  });

  it('refuses a second on the same Redis with another REDIS_PREFIX', async () => {
    const dir = tempDir('stores-two-prefixes');
    try {
      await serve(env(dir.path, urls[0], uniquePrefix('stores')));
      const second = await refused(env(dir.path, urls[0], uniquePrefix('stores-other')));
      expect(second.code).toBe(1);
      expect(second.output).toMatch(REFUSAL);
    } finally {
      dir.cleanup();
    }
  });

  it('starts a second on the same Redis and prefix spelled another way (localhost for 127.0.0.1): both serve', async () => {
    const dir = tempDir('stores-respelled');
    try {
      const prefix = uniquePrefix('stores');
      const first = await serve(env(dir.path, urls[0], prefix));
      const second = await serve(env(dir.path, urls[0].replace('127.0.0.1', 'localhost'), prefix));
      for (const { base } of [first, second]) expect((await fetch(`${base}/health`)).status).toBe(200);
      expect(storeLocks(dir.path)).toHaveLength(1);
    } finally {
      dir.cleanup();
    }
  });

  it('refuses `projections rebuild` with another store while the service serves (it would not rebuild what the service reads); runs with its store', async () => {
    const dir = tempDir('stores-rebuild');
    try {
      const prefix = uniquePrefix('stores');
      await serve(env(dir.path, urls[0], prefix));
      const elsewhere = await operatorTool(env(dir.path, urls[1], prefix), ['projections', 'rebuild']);
      expect(elsewhere.code).toBe(1);
      expect(elsewhere.stderr).toMatch(
        /^model-gateway: not rebuilt: a gateway instance is serving from .* with its read models in another Redis store .*Run the tool with the REDIS_URL and REDIS_PREFIX of the service/,
      );
      const there = await operatorTool(env(dir.path, urls[0], prefix), ['projections', 'rebuild']);
      expect(there.code).toBe(0);
      expect(there.stdout).toMatch(/rebuilt redis read models/);
    } finally {
      dir.cleanup();
    }
  });

  it('after the first is SIGKILLed, one on another Redis starts: the lock file it left holds nothing', async () => {
    const dir = tempDir('stores-killed');
    try {
      const prefix = uniquePrefix('stores');
      const { service } = await serve(env(dir.path, urls[0], prefix));
      const [left] = storeLocks(dir.path);
      service.process.kill('SIGKILL');
      await service.exited();
      await serve(env(dir.path, urls[1], prefix));
      expect(storeLocks(dir.path)).toContain(left);
      expect(storeLocks(dir.path)).toHaveLength(2);
    } finally {
      dir.cleanup();
    }
  });
});
