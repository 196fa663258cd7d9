import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { fundedOrganization } from '../support/runtime';
import { chatCompletion } from '../support/streams';

/** Credit notes in the management API, and what /generation, /key and /credits show of them; charge provenance in /generation. */

const M = TEST_MODELS;

describe('credit notes (management API) and what the API shows of them', () => {
  let g: TestGateway;
  let billing: string;
  let keysOnly: string;

  beforeAll(async () => {
    g = await startGateway();
    billing = (await createKey(g.t.runtime, g.orgId, 'finance', { kind: 'management', billing: true })).secret;
    keysOnly = (await createKey(g.t.runtime, g.orgId, 'platform', { kind: 'management' })).secret;
    await g.t.runtime.projector.catchUp();
  });
  afterAll(() => g.close());

  const call = async (method: string, path: string, secret: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${g.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${secret}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const issue = (body: unknown, secret = billing, headers?: Record<string, string>) =>
    call('POST', '/api/v1/credit-notes', secret, body, headers);

  /** A generation served with `usage` (null: the host reported none): its x-request-id and cost. */
  async function generation(secret: string, usage: { input: number; output: number } | null = { input: 2000, output: 1000 }) {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello there.', usage } });
    const res = await chatCompletion(g.baseUrl, secret, { max_tokens: 2000 });
    expect(res.status).toBe(200);
    const id = res.headers.get('x-request-id')!;
    const entry = await g.logged(id);
    return { id, cost: entry.cost, reservationId: entry.reservationId! };
  }
  const credits = (nano: number) => (nano / 1e9).toFixed(9);

  it('refunds part of a generation, once per idempotency key, and /generation, /key and /credits show it', async () => {
    const served = await generation(g.key);
    expect(served.cost).toBeGreaterThan(10);
    const before = await call('GET', '/api/v1/credits', g.key);
    const keyBefore = await call('GET', '/api/v1/key', g.key);
    const half = Math.floor(served.cost / 2);

    const ask = { kind: 'refund', generation: served.id, amount: credits(half), reason: 'provider_outage', memo: 'incident 7' };
    const first = await issue({ ...ask, idempotency_key: 'inc-7-a' });
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({
      kind: 'refund',
      generation: served.reservationId,
      key_id: g.keyId,
      amount_nano: half,
      reason: 'provider_outage',
      memo: 'incident 7',
      idempotency_key: 'inc-7-a',
      already_issued: false,
    });
    // The same key (here by the Idempotency-Key header): the first note, nothing more.
    const again = await issue(ask, billing, { 'idempotency-key': 'inc-7-a' });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: first.body.data.id, already_issued: true });

    const shown = await call('GET', `/api/v1/generation?id=${served.id}`, g.key);
    expect(shown.body.data).toMatchObject({
      cost_nano: served.cost,
      refunded_nano: half,
      refunded: half / 1e9,
      net_cost: (served.cost - half) / 1e9,
    });
    const after = await call('GET', '/api/v1/credits', g.key);
    expect(after.body.data.total_usage).toBeCloseTo(before.body.data.total_usage - half / 1e9, 9);
    const keyAfter = await call('GET', '/api/v1/key', g.key);
    expect(keyAfter.body.data.usage).toBeCloseTo(keyBefore.body.data.usage - half / 1e9, 9);

    // The rest, with no amount; then nothing is left to refund.
    const rest = await issue({ kind: 'refund', generation: served.reservationId, reason: 'dispute', idempotency_key: 'inc-7-b' });
    expect(rest.body.data.amount_nano).toBe(served.cost - half);
    const above = await issue({ ...ask, amount: '0.000000001', idempotency_key: 'inc-7-c' });
    expect(above.status).toBe(400);
    expect(above.body.error).toMatchObject({
      type: 'invalid_request_error',
      message: expect.stringMatching(/already refunded: nothing is left to refund$/),
    });
    // The same key for another note: a conflict naming the first.
    const conflict = await issue({ ...ask, amount: credits(half - 1), idempotency_key: 'inc-7-a' });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.message).toContain(first.body.data.id);

    expect((await g.audit()).differences).toEqual([]);
  });

  it('refuses a management key without billing rights, and an ordinary key, in the API’s error format', async () => {
    const served = await generation(g.key);
    const ask = { kind: 'refund', generation: served.id, reason: 'goodwill', idempotency_key: 'x-1' };
    const refused = await issue(ask, keysOnly);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      error: { message: expect.stringMatching(/billing rights/), type: 'permission_error', param: null, code: 'forbidden' },
    });
    expect((await issue(ask, g.key)).status).toBe(403);
    expect((await issue(ask, 'sk-svc-not-a-key')).status).toBe(401);
    // Nothing was refunded.
    const shown = await call('GET', `/api/v1/generation?id=${served.id}`, g.key);
    expect(shown.body.data.refunded_nano).toBe(0);
  });

  it("answers bad notes 400, an unknown generation and another organization's 404", async () => {
    const served = await generation(g.key);
    const base = { kind: 'refund', generation: served.id, idempotency_key: 'bad-1' };
    for (const body of [
      { ...base, reason: 'because' },
      { ...base, reason: 'dispute', amount: 0 },
      { ...base, reason: 'dispute', amount: -1 },
      { ...base, reason: 'dispute', amount: '1.0000000001' },
      { ...base, reason: 'dispute', extra: true },
      { kind: 'adjustment', reason: 'dispute', idempotency_key: 'bad-2' },
      { kind: 'refund', reason: 'dispute', idempotency_key: 'bad-3' },
      { ...base, reason: 'dispute', idempotency_key: 'has spaces' },
    ]) {
      const res = await issue(body);
      expect([res.status, body]).toEqual([400, body]);
      expect(res.body.error.type).toBe('invalid_request_error');
    }
    const missingKey = await issue({ kind: 'refund', generation: served.id, reason: 'dispute' });
    expect(missingKey.status).toBe(400);
    expect(missingKey.body.error.message).toMatch(/idempotency_key is required/);
    expect((await issue({ ...base, generation: 'req-never', reason: 'dispute' })).status).toBe(404);

    const other = await fundedOrganization(g.t.runtime, 100_000_000_000);
    const stranger = await createKey(g.t.runtime, other, 'stranger');
    await g.t.runtime.projector.catchUp();
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hi.', usage: { input: 20, output: 10 } } });
    const theirs = await chatCompletion(g.baseUrl, stranger.secret, { max_tokens: 20 });
    await g.settled();
    const entry = (await g.t.runtime.projections.request(other, theirs.headers.get('x-request-id')!))!;
    expect(entry.cost).toBeGreaterThan(0);
    // Neither by its request id nor by its reservation id is it found here.
    expect((await issue({ ...base, generation: entry.requestId, reason: 'dispute', idempotency_key: 'bad-5' })).status).toBe(404);
    const foreign = await issue({ ...base, generation: entry.reservationId, reason: 'dispute', idempotency_key: 'bad-4' });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.message).toMatch(/no generation .* in this organization/);
  });

  it('refuses a refund by a reply id several generations share (hosts repeat theirs), naming their request ids', async () => {
    const reply = {
      id: 'chatcmpl-repeated',
      object: 'chat.completion',
      created: 1,
      model: M.gpt.hostModel,
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 },
    };
    g.fake.on(M.gpt.hostModel, { kind: 'verbatim', body: JSON.stringify(reply) });
    const requestIds: string[] = [];
    const serve = async () => {
      const res = await chatCompletion(g.baseUrl, g.key, { max_tokens: 20 });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { id: string }).id).toBe('chatcmpl-repeated');
      requestIds.push(res.headers.get('x-request-id')!);
      await g.settled();
    };
    // While the reply id names one generation, a refund by it is issued; partly, so that more could be.
    await serve();
    const refund = { kind: 'refund', generation: 'chatcmpl-repeated', amount: '0.000000001', reason: 'dispute' };
    const once = await issue({ ...refund, idempotency_key: 'dup-0' });
    expect(once.status).toBe(201);
    await serve();
    // Once it names two, the same key still answers with its first note, as idempotency promises.
    const again = await issue({ ...refund, idempotency_key: 'dup-0' });
    expect(again.status).toBe(200);
    expect(again.body.data.id).toBe(once.body.data.id);
    const ambiguous = await issue({
      kind: 'refund',
      generation: 'chatcmpl-repeated',
      reason: 'dispute',
      idempotency_key: 'dup-1',
    });
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.body.error).toMatchObject({ code: 'conflict', param: 'generation' });
    expect(ambiguous.body.error.message).toBe(
      `generation chatcmpl-repeated names 2 generations (reply ids are not unique): name one by its request id ` +
        `(x-request-id): ${requestIds[1]}, ${requestIds[0]}`,
    );
    // Nothing was refunded; named by its request id, either one is.
    expect((await g.logged(requestIds[1])).cost).toBeGreaterThan(0);
    const first = await issue({ kind: 'refund', generation: requestIds[0], reason: 'dispute', idempotency_key: 'dup-2' });
    expect(first.status).toBe(201);
    expect(first.body.data.generation).toBe((await g.logged(requestIds[0])).reservationId);
  });

  it('refuses an adjustment that names a generation, as a refund that names none', async () => {
    const served = await generation(g.key);
    const named = await issue({
      kind: 'adjustment',
      generation: served.id,
      amount: 1,
      reason: 'goodwill',
      idempotency_key: 'adj-gen',
    });
    expect(named.status).toBe(400);
    expect(named.body.error.message).toBe('a refund names its generation; an adjustment names none');
    // Nothing issued under that key: the same key serves a note without the generation.
    const plain = await issue({ kind: 'adjustment', amount: 1, reason: 'goodwill', idempotency_key: 'adj-gen' });
    expect(plain.status).toBe(201);
  });

  it('adjusts the balance either way; a debit above what is available is a 402', async () => {
    const before = (await call('GET', '/api/v1/credits', g.key)).body.data;
    const credit = await issue({ kind: 'adjustment', amount: 2.5, reason: 'goodwill', idempotency_key: 'adj-1' });
    expect(credit.status).toBe(201);
    expect(credit.body.data).toMatchObject({ kind: 'adjustment', generation: null, key_id: null, amount: 2.5 });
    const debit = await issue({ kind: 'adjustment', amount: '-1', reason: 'correction', idempotency_key: 'adj-2' });
    expect(debit.body.data.amount_nano).toBe(-1_000_000_000);
    const after = (await call('GET', '/api/v1/credits', g.key)).body.data;
    expect(after.total_credits).toBeCloseTo(before.total_credits + 1.5, 9);
    const tooMuch = await issue({ kind: 'adjustment', amount: -1e6, reason: 'correction', idempotency_key: 'adj-3' });
    expect(tooMuch.status).toBe(402);
    expect((await g.audit()).differences).toEqual([]);
  });

  it("/generation shows each class's provenance: the host's count, or the gateway's estimate when the host gave none", async () => {
    const counted = await generation(g.key);
    const estimated = await generation(g.key, null);
    const host = (await call('GET', `/api/v1/generation?id=${counted.id}`, g.key)).body.data.provenance;
    expect(host).toEqual({ input: 'host', cache_read: 'host', cache_write: 'host', cache_write_1h: 'host', output: 'host' });
    const gateway = (await call('GET', `/api/v1/generation?id=${estimated.id}`, g.key)).body.data.provenance;
    expect(gateway).toEqual({
      input: 'gateway_estimate',
      cache_read: 'gateway_estimate',
      cache_write: 'gateway_estimate',
      cache_write_1h: 'gateway_estimate',
      output: 'gateway_estimate',
    });
    const settled = (await g.t.runtime.events.readStream(`reservation-${estimated.reservationId}`)).at(-1)!;
    expect(settled.data).toMatchObject({
      usageFlag: 'the host reported no usage',
      estimated: ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'],
    });
    const hostCounted = (await g.t.runtime.events.readStream(`reservation-${counted.reservationId}`)).at(-1)!;
    expect(hostCounted.data).not.toHaveProperty('estimated');
  });
});
