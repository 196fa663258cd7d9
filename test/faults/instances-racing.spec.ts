import type { CreditsReserved } from '../../src/ledger/ledger.events';
import { OtherInstance, startGateway, startOtherInstance, TEST_MODELS, TestGateway } from '../support/gateway';
import { describeWithRedis } from '../support/redis';
import { fundedOrganization } from '../support/runtime';
import { createKey } from '../support/keys';
import { raceForCredit } from '../support/credit-race';

/** Two instances sharing the log and Redis race for one balance: it is never overdrawn. */

const M = TEST_MODELS;

describeWithRedis('two instances racing one balance', () => {
  let g: TestGateway;
  let other: OtherInstance;

  beforeAll(async () => {
    g = await startGateway({ redis: true });
    other = await startOtherInstance(g);
  });
  afterAll(async () => {
    await other.close();
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

    // An organization that can hold exactly 20 of them at once; the host holds its replies until all are decided.
    const orgId = await fundedOrganization(g.t.runtime, 20 * amount + amount - 1);
    const { secret } = await createKey(g.t.runtime, orgId, 'racing');
    await g.t.runtime.projector.catchUp();
    await other.runtime.projector.catchUp();
    const answers = await raceForCredit(g.fake, M.gpt.hostModel, 60, (i) =>
      ask(i % 2 === 0 ? g.baseUrl : other.url, secret).then(async (r) => (await r.text(), { status: r.status })),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 402)).toHaveLength(40);

    await g.settled();
    const balance = await g.t.runtime.projections.balance(orgId);
    expect(balance.reserved).toBe(0);
    expect(balance.granted - balance.spent).toBeGreaterThanOrEqual(0);
    expect((await g.audit()).differences).toEqual([]);
  });
});
