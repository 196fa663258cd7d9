import type { CreditsReserved } from '../../src/ledger/ledger.events';
import { auditThenClose, startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { eventually } from '../support/processes';
import { describeWithRedisCluster, RedisCluster, startRedisCluster } from '../support/redis-cluster';

/**
 * The gateway on a real Redis Cluster (three masters, one replica each): it starts, serves and
 * bills; and a master lost under traffic (a planned failover, then a master killed) costs requests
 * at most a 503 — never a 401 for a valid key, never a credit lost or counted twice.
 */

const M = TEST_MODELS;

describeWithRedisCluster('the gateway on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let g: TestGateway;
  /** What one request reserves, as the ledger records it. */
  let amount: number;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    g = await startGateway({ redis: true, env: cluster.env });
  }, 60_000);
  afterAll(async () => {
    try {
      if (g) await auditThenClose(g);
    } finally {
      await cluster?.stop();
    }
  });

  const ask = (key: string) =>
    fetch(`${g.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: M.gpt.slug, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
    }).then(async (r) => (await r.text(), r.status));

  /** The master holding an organization's keys (they share its hash tag, so one slot). */
  const masterOfOrganization = (orgId: string) => cluster.masterOf(`${g.t.env.REDIS_PREFIX}{org:${orgId}}:ledger`);

  it('starts, serves and bills; the operator tool audits the ledger clean on the cluster', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    const probe = await fetch(`${g.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify({ model: M.gpt.slug, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(probe.status).toBe(200);
    await probe.text();
    const events = await g.t.runtime.events.readAll(0, 100_000);
    const reserved = events.find(
      (e) => e.type === 'CreditsReserved' && (e.data as CreditsReserved['data']).requestId === probe.headers.get('x-request-id'),
    );
    amount = (reserved!.data as CreditsReserved['data']).amount;
    expect(await Promise.all(Array.from({ length: 10 }, () => ask(g.key)))).toEqual(Array(10).fill(200));

    await g.settled();
    const balance = await g.t.runtime.projections.balance(g.orgId);
    expect(balance.spent).toBeGreaterThan(0);
    expect((await g.auditWithOperatorTool()).report).toMatchObject({ clean: true, differences: [], settlements: 11 });
  });

  /**
   * Credit for exactly `n` requests held together (the host answers only once every request is
   * decided, so every admitted one holds until the end); requests keep arriving while `failure` runs on the master holding the
   * organization's keys, and until enough have come after it to fill the credit.
   */
  async function underFailover(n: number, failure: (port: number) => Promise<unknown>, onMaster = (_port: number) => true) {
    // Organizations' ids are random, so are their slots: one on a master `onMaster` takes.
    let orgId: string;
    let port: number;
    do {
      orgId = (await g.t.runtime.identity.createOrganization('Failover')).orgId;
      port = await masterOfOrganization(orgId);
    } while (!onMaster(port));
    await g.t.runtime.ledger.grant(orgId, n * amount + amount - 1, 'test');
    const { secret } = await createKey(g.t.runtime, orgId, 'failover');
    await g.t.runtime.projector.catchUp();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' }, released });
    const atHost = () => g.fake.requests.filter((r) => r.body?.model === M.gpt.hostModel).length;
    const atHostBefore = atHost();

    const statuses: Array<Promise<number>> = [];
    let answeredSoFar = 0;
    let failedOver = false;
    let after = 0;
    const failing = failure(port).then(() => (failedOver = true));
    // Ten requests every 50 ms, until the failover is over and 40 more have been answered after it.
    const deadline = Date.now() + 30_000;
    while (!failedOver || after < 40) {
      if (Date.now() > deadline) throw new Error(`the gateway did not serve again after the failover (${after} answered)`);
      for (let i = 0; i < 10; i++) {
        const sent = ask(secret).then((status) => (answeredSoFar++, status));
        if (failedOver) void sent.then((status) => status !== 503 && (after += 1));
        statuses.push(sent);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await failing;
    // Quiet: every request refused (or told to try again) or held at the host; only then does it answer.
    try {
      await eventually(() => answeredSoFar + atHost() - atHostBefore >= statuses.length, 30_000);
    } finally {
      release();
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    }
    const answered = await Promise.all(statuses);
    const count = (status: number) => answered.filter((s) => s === status).length;
    // Only admitted, refused for credit, or "try again": never a valid key refused.
    expect(answered.filter((s) => ![200, 402, 503].includes(s))).toEqual([]);
    expect(count(200)).toBe(n);
    expect(count(402)).toBeGreaterThan(0);

    await g.settled();
    const balance = await g.t.runtime.projections.balance(orgId);
    expect(balance).toMatchObject({ reserved: 0, pending: 0 });
    const { report } = await g.auditWithOperatorTool();
    expect(report.differences).toEqual([]);
    expect(report.clean).toBe(true);
    return { port, answered };
  }

  let promoted: number;

  it('a planned failover (CLUSTER FAILOVER, the old master then stopped) under traffic: exactly the credit admitted, audit clean', async () => {
    const { port } = await underFailover(20, async (master) => {
      promoted = await cluster.failOver(master);
    });
    expect(promoted).not.toBe(port);
  }, 60_000);

  it('a master killed under traffic, its replica promoted: at most 503s meanwhile, exactly the credit admitted, audit clean', async () => {
    // On a master that still has a replica: not the one promoted above (its old master is stopped).
    const { answered } = await underFailover(
      20,
      (master) => cluster.killMaster(master),
      (master) => master !== promoted,
    );
    expect(answered.length).toBeGreaterThan(60);
  }, 90_000);
});
