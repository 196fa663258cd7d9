import type { ChildProcess } from 'node:child_process';
import { createClient } from 'redis';
import { eventually } from '../support/processes';
import { freePort, hasRedisServer, startRedis, stopRedis } from '../support/own-redis';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';

/**
 * Redis as a dependency: a Redis of the test's own (a separate redis-server, nothing kept on
 * disk) stopped under the gateway and started again, empty.
 */

(hasRedisServer ? describe : describe.skip)('Redis stopped and started again, empty', () => {
  let port: number;
  let redis: ChildProcess;
  let g: TestGateway;

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis(port);
    g = await startGateway({ redis: true, env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
    g.fake.on(TEST_MODELS.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
  });
  afterAll(async () => {
    await g.close();
    if (redis.exitCode === null) await stopRedis(redis);
  });

  const chat = () =>
    fetch(`${g.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify({ model: TEST_MODELS.gpt.slug, messages: [{ role: 'user', content: 'Hi' }] }),
    });

  it('answers 503 at once while Redis is away and is not ready, and serves again by itself once it is back — never a 401 for a valid key', async () => {
    expect((await chat()).status).toBe(200);

    const ready = () =>
      fetch(`${g.baseUrl}/health/ready`).then(async (r) => ({
        status: r.status,
        body: (await r.json()) as { reasons: string[] },
      }));
    expect(await ready()).toEqual({ status: 200, body: { ready: true, reasons: [] } });

    await stopRedis(redis);
    const notReady = await ready();
    expect(notReady.status).toBe(503);
    expect(notReady.body.reasons).toEqual([expect.stringMatching(/^read models: their store does not answer/)]);
    const started = performance.now();
    const away = await chat();
    expect(away.status).toBe(503);
    expect(await away.json()).toMatchObject({ error: { message: expect.stringContaining('Redis') } });
    expect(performance.now() - started).toBeLessThan(3_000);
    const credits = await fetch(`${g.baseUrl}/api/v1/credits`, { headers: { authorization: `Bearer ${g.key}` } });
    expect(credits.status).toBe(503);

    // Back, empty (nothing kept on disk), with no other process appending anything: the gateway
    // notices the read models are gone, rebuilds them from the log, and the key works again.
    redis = await startRedis(port);
    const statuses: number[] = [];
    await eventually(
      async () => {
        const res = await chat();
        statuses.push(res.status);
        return res.status === 200;
      },
      15_000,
      100,
    );
    expect(statuses.filter((s) => s === 401)).toEqual([]);
    expect(await ready()).toEqual({ status: 200, body: { ready: true, reasons: [] } });
    expect(new Set(statuses.filter((s) => s !== 200))).toEqual(new Set(statuses.length > 1 ? [503] : []));

    await g.settled();
    expect((await g.audit()).differences).toEqual([]);
  });
});

(hasRedisServer ? describe : describe.skip)('Redis emptied while requests run', () => {
  let port: number;
  let redis: ChildProcess;
  let g: TestGateway;

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis(port);
    g = await startGateway({ redis: true, env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
    g.fake.on(TEST_MODELS.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    // A log of some size, so that rebuilding it takes long enough for requests to arrive meanwhile.
    for (let i = 0; i < 20; i++) {
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          const { orgId } = await g.t.runtime.identity.createOrganization('Filler');
          await g.t.runtime.ledger.grant(orgId, 1_000_000_000, 'filler');
          await createKey(g.t.runtime, orgId, 'filler');
        }),
      );
    }
    await g.t.runtime.projector.catchUp();
  });
  afterAll(async () => {
    await g.close();
    if (redis.exitCode === null) await stopRedis(redis);
  });

  const auth = () => ({ authorization: `Bearer ${g.key}` });

  it('answers a valid key only 200 or 503 — never 401, never a balance of nothing — until the read models are rebuilt', async () => {
    const granted = (
      (await (await fetch(`${g.baseUrl}/api/v1/credits`, { headers: auth() })).json()) as { data: { total_credits: number } }
    ).data.total_credits;
    const seen: Array<{ status: number; wrong?: string }> = [];
    let emptied = false;
    let servedAfter = 0;
    const worker = async () => {
      while (servedAfter < 40) {
        const [chat, credits] = await Promise.all([
          fetch(`${g.baseUrl}/api/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...auth() },
            body: JSON.stringify({ model: TEST_MODELS.gpt.slug, messages: [{ role: 'user', content: 'Hi' }] }),
          }),
          fetch(`${g.baseUrl}/api/v1/credits`, { headers: auth() }),
        ]);
        await chat.arrayBuffer();
        seen.push({ status: chat.status });
        const body = (await credits.json()) as { data?: { total_credits: number } };
        seen.push(
          credits.status === 200 && body.data?.total_credits !== granted
            ? { status: 200, wrong: `total_credits ${body.data?.total_credits}` }
            : { status: credits.status },
        );
        if (emptied && chat.status === 200 && credits.status === 200) servedAfter += 1;
      }
    };
    const client = createClient({ url: `redis://127.0.0.1:${port}` });
    await client.connect();
    const workers = Array.from({ length: 8 }, worker);
    try {
      await eventually(() => seen.length > 40);
      await client.flushAll();
      emptied = true;
      await Promise.all(workers);
    } finally {
      await client.close();
    }
    expect(seen.filter((s) => s.status !== 200 && s.status !== 503)).toEqual([]);
    expect(seen.filter((s) => s.wrong !== undefined)).toEqual([]);
    await g.settled();
    expect((await g.audit()).differences).toEqual([]);
    // The rebuild of the read models under eight clients' load: on a slow shared machine, past the 30 s default.
  }, 120_000);
});
