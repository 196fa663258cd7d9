import type { ReservationReleased, ReservationSettled } from '../../src/ledger/ledger.events';
import type { FakeUpstream } from '../support/fake-upstream';
import { auditThenClose, OtherInstance, startGateway, startOtherInstance, TestGateway } from '../support/gateway';
import { LogCapture } from '../support/log-capture';
import { eventually } from '../support/processes';
import { describeWithRedis } from '../support/redis';
import { CHAT_COMPLETIONS, MESSAGES, Surface } from '../support/surfaces';

/**
 * Circuit breaking: a host that keeps failing for a model is passed over for a cool-down, then
 * probed by one call, and closed again when it serves; its state shared by every instance on the
 * same Redis. Also what the gateway measures of its hosts (time to first byte, throughput, errors).
 */

const FAILURES = 3;
const COOLDOWN_MS = 1_500;
const ENV = { HOST_BREAKER_FAILURES: String(FAILURES), HOST_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS) };

const MODELS = {
  /** `breaker-a` (which fails in these tests), then `breaker-b`. */
  pair: { slug: 'test/breaker', first: 'fake-breaker-a', second: 'fake-breaker-b' },
  /** `breaker-a` alone. */
  solo: { slug: 'test/breaker-solo', only: 'fake-breaker-solo' },
} as const;

function catalogue(fake: FakeUpstream) {
  // No retries: each request calls each host once, so failures are counted one per request.
  const host = (id: string) => ({
    id,
    kind: 'openai',
    baseUrl: `${fake.url}/v1`,
    apiKeyEnv: 'FAKE_OPENAI_KEY',
    retry: { attempts: 0 },
  });
  const model = (slug: string, id: string, hosts: Array<[string, string]>) => ({
    slug,
    id,
    name: slug,
    contextLength: 128_000,
    maxOutputTokens: 1000,
    hosts: hosts.map(([h, m]) => ({ host: h, model: m, pricing: { input: '1.00', output: '2.00' } })),
  });
  return {
    hosts: [host('breaker-a'), host('breaker-b')],
    models: [
      model(MODELS.pair.slug, 'bbbbbbbb-1111-4111-8111-111111111111', [
        ['breaker-a', MODELS.pair.first],
        ['breaker-b', MODELS.pair.second],
      ]),
      model(MODELS.solo.slug, 'bbbbbbbb-2222-4222-8222-222222222222', [['breaker-a', MODELS.solo.only]]),
    ],
  };
}

const ask = (base: string, key: string, slug: string, surface: Surface = CHAT_COMPLETIONS) =>
  fetch(`${base}/api/v1/${surface.path(slug)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...surface.headers(key) },
    body: JSON.stringify(surface.body(slug, false)),
  });

const callsTo = (fake: FakeUpstream, hostModel: string) => fake.requests.filter((r) => r.body?.model === hostModel).length;

interface Ready {
  circuits?: Array<{ host: string; model: string; phase: string; until?: string }>;
}
const circuitOf = async (base: string, host: string, model: string) => {
  const ready = (await (await fetch(`${base}/health/ready`)).json()) as Ready;
  return ready.circuits?.find((c) => c.host === host && c.model === model);
};

/** A gauge's value for `host` and `model` in a /metrics text; undefined when not shown. */
function gauge(metrics: string, name: string, host: string, model: string): number | undefined {
  const line = metrics
    .split('\n')
    .find((l) => l.startsWith(`${name}{`) && l.includes(`host="${host}"`) && l.includes(`model="${model}"`));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

/** The resolution (settlement or release) of request `requestId`, as the log holds it. */
async function resolutionOf(g: TestGateway, requestId: string) {
  await g.settled();
  const events = await g.t.runtime.events.readAll(0, 100_000);
  const found = events.find(
    (e) =>
      (e.type === 'ReservationSettled' || e.type === 'ReservationReleased') &&
      (e.data as { requestId: string }).requestId === requestId,
  );
  expect(found).toBeDefined();
  return found!.data as ReservationSettled['data'] | ReservationReleased['data'];
}

describe('a host that keeps failing, the only host of its model (in-process circuits)', () => {
  let g: TestGateway;
  const log = new LogCapture();

  beforeAll(async () => {
    g = await startGateway({ env: ENV, catalogue, logStream: log });
  });
  afterAll(() => auditThenClose(g));

  it('opens its circuit (logged once), then the model is refused with 503 in the caller’s format, nothing called, the release listing the host passed over', async () => {
    g.fake.on(MODELS.solo.only, { kind: 'status', status: 500 });
    for (let i = 0; i < FAILURES; i++) {
      const res = await ask(g.baseUrl, g.key, MODELS.solo.slug);
      expect(res.status).toBe(502);
      await res.text();
    }
    const opened = await log.waitFor(
      (l) => typeof l.msg === 'string' && l.msg.startsWith('circuit of host breaker-a for test/breaker-solo'),
    );
    expect(opened.msg).toBe(
      `circuit of host breaker-a for test/breaker-solo: closed → open (${FAILURES} failures in a row; passed over for ${COOLDOWN_MS} ms)`,
    );

    const chat = await ask(g.baseUrl, g.key, MODELS.solo.slug);
    expect(chat.status).toBe(503);
    expect(CHAT_COMPLETIONS.error(await chat.text())).toEqual({
      type: 'service_unavailable',
      message: "the model's hosts are failing and are passed over for now; try again shortly",
    });
    const messages = await ask(g.baseUrl, g.key, MODELS.solo.slug, MESSAGES);
    expect(messages.status).toBe(503);
    expect(MESSAGES.error(await messages.text()).type).toBe('overloaded_error');
    expect(callsTo(g.fake, MODELS.solo.only)).toBe(FAILURES);

    const released = await resolutionOf(g, chat.headers.get('x-request-id')!);
    expect(released.attempts).toEqual([
      { host: 'breaker-a', credential: null, status: null, reason: 'circuit_open', durationMs: 0 },
    ]);
    // The request's log line lists them too.
    expect((await log.request(chat.headers.get('x-request-id')!)).attempts).toEqual(released.attempts);
    // Only state changes are logged: the requests passed over wrote no line of their own.
    expect(log.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('circuit of host'))).toHaveLength(1);
  });

  it('measures its hosts: time to first byte, output tokens per second and error rate, in /metrics and for routing', async () => {
    g.fake.on(MODELS.pair.first, { kind: 'status', status: 503 });
    g.fake.on(MODELS.pair.second, {
      kind: 'reply',
      reply: { text: 'Slow but sure.', usage: { input: 10, output: 40 } },
      firstByteDelayMs: 300,
    });
    for (let i = 0; i < 2; i++) {
      const res = await ask(g.baseUrl, g.key, MODELS.pair.slug);
      expect(res.status).toBe(200);
      await res.text();
    }
    const health = g.t.runtime.routing.health;
    const slow = health.of('breaker-b', MODELS.pair.slug)!;
    expect(slow).toMatchObject({ calls: 2, errorRate: 0 });
    expect(slow.firstByteMs).toBeGreaterThanOrEqual(300 - 5);
    expect(slow.outputTokensPerSecond).toBeGreaterThan(0);
    expect(health.of('breaker-a', MODELS.pair.slug)).toMatchObject({ calls: 2, errorRate: 1, outputTokensPerSecond: null });

    const metrics = await (await fetch(`${g.baseUrl}/metrics`)).text();
    expect(gauge(metrics, 'gateway_host_first_byte_seconds', 'breaker-b', MODELS.pair.slug)).toBeGreaterThanOrEqual(0.295);
    expect(gauge(metrics, 'gateway_host_error_ratio', 'breaker-a', MODELS.pair.slug)).toBe(1);
    expect(gauge(metrics, 'gateway_host_error_ratio', 'breaker-b', MODELS.pair.slug)).toBe(0);
    expect(gauge(metrics, 'gateway_host_output_tokens_per_second', 'breaker-b', MODELS.pair.slug)).toBeGreaterThan(0);
    expect(gauge(metrics, 'gateway_host_circuit_state', 'breaker-a', MODELS.solo.slug)).toBe(2);
    expect(metrics).toMatch(/gateway_host_attempts_total\{host="breaker-a",model="test\/breaker",reason="server_error"\} 2/);
  });
});

describeWithRedis('a host that keeps failing, then recovers, across two instances', () => {
  let g: TestGateway;
  let other: OtherInstance;

  beforeAll(async () => {
    g = await startGateway({ redis: true, env: ENV, catalogue });
    other = await startOtherInstance(g, { catalogue });
  });
  afterAll(async () => {
    await other.close();
    await auditThenClose(g);
  });

  it('opens on one instance, is passed over on the other, lets one probe through after the cool-down, and closes for both', async () => {
    const { slug, first, second } = MODELS.pair;
    g.fake.on(first, { kind: 'status', status: 503 });
    g.fake.on(second, { kind: 'reply', reply: { text: 'From the second host.' } });

    // The failures, all on the first instance: each served by the second host.
    for (let i = 0; i < FAILURES; i++) {
      const res = await ask(g.baseUrl, g.key, slug);
      expect(res.status).toBe(200);
      await res.text();
    }
    // The circuit is recorded once the last call ends (after the reply): both instances then see it open.
    await eventually(async () => (await circuitOf(g.baseUrl, 'breaker-a', slug))?.phase === 'open');
    expect(callsTo(g.fake, first)).toBe(FAILURES);

    // The other instance passes the host over: not called, the second host serves, the attempt recorded.
    const passed = await ask(other.url, g.key, slug);
    expect(passed.status).toBe(200);
    await passed.text();
    expect(callsTo(g.fake, first)).toBe(FAILURES);
    const settled = await resolutionOf(g, passed.headers.get('x-request-id')!);
    expect(settled.attempts!.map((a) => [a.host, a.reason])).toEqual([
      ['breaker-a', 'circuit_open'],
      ['breaker-b', 'ok'],
    ]);
    const circuit = (await circuitOf(other.url, 'breaker-a', slug))!;
    expect(circuit.phase).toBe('open');
    const metrics = await (await fetch(`${other.url}/metrics`)).text();
    expect(gauge(metrics, 'gateway_host_circuit_state', 'breaker-a', slug)).toBe(2);

    // The host recovers, slowly. Past the cool-down (a time, not an event: waited for as such), one
    // request on each instance at once: exactly one is the probe; the other is passed over.
    g.fake.on(first, { kind: 'reply', reply: { text: 'Recovered.' }, firstByteDelayMs: 300 });
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(circuit.until!) - Date.now() + 20)));
    const [one, two] = await Promise.all([ask(g.baseUrl, g.key, slug), ask(other.url, g.key, slug)]);
    const texts = [CHAT_COMPLETIONS.read(await one.text(), false).text, CHAT_COMPLETIONS.read(await two.text(), false).text];
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(texts.sort()).toEqual(['From the second host.', 'Recovered.']);
    expect(callsTo(g.fake, first)).toBe(FAILURES + 1);

    // The probe served: closed for both instances, and the first host serves again.
    await eventually(async () => (await circuitOf(g.baseUrl, 'breaker-a', slug))?.phase === 'closed');
    const again = await ask(other.url, g.key, slug);
    expect(CHAT_COMPLETIONS.read(await again.text(), false).text).toBe('Recovered.');
    expect(callsTo(g.fake, first)).toBe(FAILURES + 2);
  });
});
