import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import type { CreditsReserved } from '../../src/ledger/ledger.events';
import { openRuntime, Runtime } from '../../src/runtime/runtime';
import { startGateway, testCatalogue, TEST_MODELS, TestGateway } from '../support/gateway';
import { describeWithRedis } from '../support/redis';
import { fundedOrganization } from '../support/runtime';

/** Two instances sharing the log and Redis race for one balance: it is never overdrawn. */

const M = TEST_MODELS;

describeWithRedis('two instances racing one balance', () => {
  let g: TestGateway;
  let other: { runtime: Runtime; app: NestFastifyApplication; url: string };

  beforeAll(async () => {
    g = await startGateway({ redis: true });
    const runtime = await openRuntime(loadConfig(g.t.env));
    const app = await createApp(runtime, { logger: false, catalogue: testCatalogue(g.fake) });
    await app.listen(0, '127.0.0.1');
    other = { runtime, app, url: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}` };
  });
  afterAll(async () => {
    await other.app.close();
    await other.runtime.close();
    await g.close();
  });

  const ask = (base: string, key: string) =>
    fetch(`${base}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: M.gpt.slug, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
    });

  it('60 requests over both instances against credit for 20 reservations: exactly 20 served, 40 refused, audit clean', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    // What one such request reserves, as the ledger recorded it.
    const probe = await ask(g.baseUrl, g.key);
    await probe.text();
    const requestId = probe.headers.get('x-request-id');
    const events = await g.t.runtime.events.readAll(0, 100_000);
    const amount = (
      events.find((e) => e.type === 'CreditsReserved' && (e.data as CreditsReserved['data']).requestId === requestId)!
        .data as CreditsReserved['data']
    ).amount;

    // An organization that can hold exactly 20 of them at once; the host answers after a second, so all are held together.
    const orgId = await fundedOrganization(g.t.runtime, 20 * amount + amount - 1);
    const { secret } = await g.t.runtime.identity.createApiKey(orgId, 'racing');
    await g.t.runtime.projector.catchUp();
    await other.runtime.projector.catchUp();
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' }, firstByteDelayMs: 1000 });
    const statuses = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        ask(i % 2 === 0 ? g.baseUrl : other.url, secret).then(async (r) => (await r.text(), r.status)),
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 402)).toHaveLength(40);

    await g.settled();
    const balance = await g.t.runtime.projections.balance(orgId);
    expect(balance.reserved).toBe(0);
    expect(balance.granted - balance.spent).toBeGreaterThanOrEqual(0);
    expect((await g.audit()).differences).toEqual([]);
  });
});
