import { EsdbCluster } from '../support/esdb-server/cluster';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, TEST_MODELS } from '../support/gateway';
import { createKey } from '../support/keys';
import { operatorToolJson } from '../support/operator-tool';
import { Child, eventually, startService } from '../support/processes';
import { describeWithRedis } from '../support/redis';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';

/**
 * The scale-out shape over real gRPC: three gateway processes on a three-node EventStoreDB cluster
 * (the protocol server) and Redis. 1,000 concurrent requests against credit for exactly 100, with
 * the leader going down and another elected in the middle: exactly 100 admitted, none lost, the
 * operator tool's audit clean.
 */

const M = TEST_MODELS;
const REQUESTS = 1_000;
const ADMITTED = 100;

describeWithRedis('three gateway processes on a three-node EventStoreDB cluster', () => {
  let cluster: EsdbCluster;
  let fake: FakeUpstream;
  let t: TestRuntime;
  const services: Child[] = [];

  beforeAll(async () => {
    cluster = await EsdbCluster.start(3, { systemEventEvery: 50 });
    fake = await startFakeUpstream();
    t = await openTestRuntime({ redis: true, env: { EVENTSTORE_URL: cluster.url } });
  });
  afterAll(async () => {
    for (const service of services) service.process.kill('SIGKILL');
    await Promise.all(services.map((service) => service.exited()));
    await fake.close();
    await t.cleanup();
    await cluster.close();
  });

  it(`${REQUESTS} concurrent requests, credit for ${ADMITTED}, a leader change midway: exactly ${ADMITTED} admitted, audit clean`, async () => {
    const ask = (base: string, key: string) =>
      fetch(`${base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: M.gpt.slug, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
      }).then(async (response) => (await response.text(), response.status));

    const env = serviceEnv(t, fake, {});
    // One after the other: three starting at once on a loaded machine outlast each start's budget.
    const bases: string[] = [];
    for (let i = 0; i < 3; i++) {
      const started = await startService(env);
      services.push(started.service);
      bases.push(started.base);
    }
    // What one request reserves (its hold): the first served, on an organization of its own.
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    const probeOrg = await fundedOrganization(t.runtime, 100_000_000_000);
    const probeKey = (await createKey(t.runtime, probeOrg, 'probe')).secret;
    expect(await ask(bases[0], probeKey)).toBe(200);
    const reserve = await reservedAmount(t, probeOrg);

    // Credit for exactly ADMITTED holds at once; the host answers after a second, so all are held together.
    const orgId = await fundedOrganization(t.runtime, ADMITTED * reserve + reserve - 1);
    const { secret } = await createKey(t.runtime, orgId, 'scale-out');
    await t.runtime.projector.catchUp();
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' }, firstByteDelayMs: 1000 });

    const appendsBefore = cluster.nodes[0].calls.append;
    const traffic = Promise.all(Array.from({ length: REQUESTS }, (_, i) => ask(bases[i % 3], secret)));
    await eventually(() => cluster.nodes[0].calls.append > appendsBefore + 5, 20_000);
    await cluster.switchLeader(1);
    const statuses = await traffic;

    expect(cluster.nodes[1].calls.append).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 200)).toHaveLength(ADMITTED);
    expect(statuses.filter((s) => s === 402)).toHaveLength(REQUESTS - ADMITTED);
    await eventually(async () => {
      await t.runtime.projector.catchUp();
      const balance = await t.runtime.projections.balance(orgId);
      return balance.reserved === 0 && balance.pending === 0;
    }, 20_000);
    const report = (await operatorToolJson(t.env, ['ledger', 'audit'])) as { clean: boolean; differences: unknown[] };
    expect(report.differences).toEqual([]);
    expect(report.clean).toBe(true);
  }, 120_000);
});

/** What one request of the test reserved (its hold), from the probe organization's log. */
async function reservedAmount(t: TestRuntime, orgId: string): Promise<number> {
  const events = await t.runtime.events.readAll(0, 1_000_000);
  const reserved = events.find((e) => e.type === 'CreditsReserved' && (e.data as { orgId?: string }).orgId === orgId);
  if (!reserved) throw new Error('the probe request reserved nothing');
  return (reserved.data as { amount: number }).amount;
}
