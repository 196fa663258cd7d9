import { EsdbCluster } from '../support/esdb-server/cluster';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, TEST_MODELS } from '../support/gateway';
import { createKey } from '../support/keys';
import { raceForCredit } from '../support/credit-race';
import { Child, eventually } from '../support/processes';
import { describeWithRedis } from '../support/redis';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { ask, expectNothingLost, reservePerRequest, startGateways, stopGateways } from '../support/scale-out';

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
  let services: Child[] = [];

  beforeAll(async () => {
    cluster = await EsdbCluster.start(3, { systemEventEvery: 50 });
    fake = await startFakeUpstream();
    t = await openTestRuntime({ redis: true, env: { EVENTSTORE_URL: cluster.url } });
  });
  afterAll(async () => {
    await stopGateways(services);
    await fake.close();
    await t.cleanup();
    await cluster.close();
  });

  it(`${REQUESTS} concurrent requests, credit for ${ADMITTED}, a leader change midway: exactly ${ADMITTED} admitted, audit clean`, async () => {
    const started = await startGateways(serviceEnv(t, fake, {}), 3);
    services = started.services;
    const bases = started.bases;
    const reserve = await reservePerRequest(t, fake, bases[0]);

    // Credit for exactly ADMITTED holds at once; the host holds its replies until all are decided.
    const orgId = await fundedOrganization(t.runtime, ADMITTED * reserve + reserve - 1);
    const { secret } = await createKey(t.runtime, orgId, 'scale-out');
    await t.runtime.projector.catchUp();
    const appendsBefore = cluster.nodes[0].calls.append;
    const traffic = raceForCredit(
      fake,
      M.gpt.hostModel,
      REQUESTS,
      (i) => ask(bases[i % 3], secret).then((status) => ({ status })),
      90_000,
    );
    await eventually(() => cluster.nodes[0].calls.append > appendsBefore + 5, 20_000);
    await cluster.switchLeader(1);
    const statuses = (await traffic).map((a) => a.status);

    expect(cluster.nodes[1].calls.append).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 200)).toHaveLength(ADMITTED);
    expect(statuses.filter((s) => s === 402)).toHaveLength(REQUESTS - ADMITTED);
    await expectNothingLost(t, orgId);
  }, 120_000);
});
