import OpenAI from 'openai';
import request from 'supertest';
import { chargeFor } from '../../src/ledger/money';
import { ReservationSettled, settledPrices, settledUsage } from '../../src/ledger/ledger.events';
import { eventually } from '../support/processes';
import {
  auditThenClose,
  PLAIN_GPT,
  plainGptModel,
  startGateway,
  testCatalogueWith,
  TEST_MODELS,
  TestGateway,
} from '../support/gateway';

const M = TEST_MODELS;
const chat = (extra: Record<string, unknown> = {}) => ({
  model: M.gpt.slug,
  messages: [{ role: 'user', content: 'Tell me a long story' }],
  ...extra,
});

/** Reads an SSE response as text until `until` says stop, then aborts it (the client goes away). */
async function readThenAbort(url: string, key: string, body: unknown, until: (text: string) => boolean): Promise<string> {
  const abort = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: abort.signal,
  });
  const reader = res.body!.getReader();
  const utf8 = new TextDecoder();
  let text = '';
  while (!until(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += utf8.decode(value, { stream: true });
  }
  abort.abort();
  return text;
}

async function streamText(g: TestGateway, body: unknown): Promise<string> {
  const res = await fetch(`${g.baseUrl}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return res.text();
}

const contentOf = (sse: string) =>
  sse
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)))
    .map((c) => c.choices?.[0]?.delta?.content ?? '')
    .join('');

async function lastSettlement(g: TestGateway): Promise<ReservationSettled['data'] | null> {
  const events = await g.t.runtime.events.readAll(0, 100_000);
  const last = [...events].reverse().find((e) => e.type === 'ReservationSettled' || e.type === 'ReservationReleased');
  return last?.type === 'ReservationSettled' ? (last.data as ReservationSettled['data']) : null;
}

describe('billing on every ending', () => {
  let g: TestGateway;
  beforeAll(async () => {
    // The request limit leaves a fallback after a first host's 1 s of silence 2 s to be served: with
    // 0.5 s, a loaded machine (the other suites running beside this one) ran out of it.
    // Read models in Redis, so the operator tool's audit, in its own process, compares with what the gateway served from.
    g = await startGateway({
      redis: true,
      catalogue: testCatalogueWith(plainGptModel()),
      env: { REQUEST_TIMEOUT_MS: '3000', HOST_FIRST_BYTE_TIMEOUT_MS: '1000', SSE_KEEPALIVE_MS: '100' },
    });
  });
  afterAll(async () => {
    const report = await auditThenClose(g);
    expect(report.reservations).toBeGreaterThan(10);
    expect(report.settlements + report.releases + report.expiries).toBe(report.reservations);
  });
  afterEach(async () => g.settled());

  it('client abort mid-stream on a model that does not reason: the upstream socket closes within a second and only delivered tokens are charged', async () => {
    const words = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: words, usage: { input: 50, output: 400 } }, chunkDelayMs: 5 });
    const index = g.fake.requests.length;
    const received = await readThenAbort(
      `${g.baseUrl}/api/v1/chat/completions`,
      g.key,
      chat({ model: PLAIN_GPT.slug, stream: true }),
      (t) => contentOf(t).length > 60,
    );
    const abortedAt = Date.now();
    await g.fake.closed(index);
    expect(Date.now() - abortedAt).toBeLessThan(1000);
    await g.settled();
    const settled = await lastSettlement(g);
    expect(settled).toMatchObject({ status: 'client_abort', host: 'fake-openai' });
    // Billed for what was delivered (the host never reported usage): far less than the whole reply.
    expect(settled!.outputTokens).toBeGreaterThanOrEqual(Math.ceil(contentOf(received).length / 4));
    expect(settled!.outputTokens).toBeLessThan(400 / 2);
    expect(settled!.amount).toBe(chargeFor(settledUsage(settled!), settledPrices(settled!)));
  });

  it('client abort mid-stream on a reasoning model: the host is read to its end, and its count, hidden reasoning included, is charged', async () => {
    // The reviewer's case: the client leaves once it has the text it wanted, before the usage chunk;
    // the host charges for the 800 tokens of reasoning it never showed all the same.
    const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    const usage = { input: 50, output: 840, reasoning: 800 };
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: words, usage }, chunkDelayMs: 5 });
    const index = g.fake.requests.length;
    const received = await readThenAbort(
      `${g.baseUrl}/api/v1/chat/completions`,
      g.key,
      chat({ stream: true }),
      (t) => contentOf(t).length > 60,
    );
    // The fake's closed() rejects when its reply completed: the gateway read it to the end.
    await expect(g.fake.closed(index)).rejects.toThrow();
    await g.settled();
    const settled = await lastSettlement(g);
    expect(settled).toMatchObject({ status: 'client_abort', host: 'fake-openai', inputTokens: 50, outputTokens: 840 });
    expect(contentOf(received).length).toBeLessThan(words.length);
    expect(settled!.amount).toBe(chargeFor(settledUsage(settled!), settledPrices(settled!)));
  });

  it('a reasoning model answered in one piece whose client leaves: the reply is still read, and charged as the host counted it', async () => {
    g.fake.on(M.gpt.hostModel, {
      kind: 'reply',
      reply: { text: 'The answer.', usage: { input: 30, output: 900, reasoning: 880 } },
      firstByteDelayMs: 300,
    });
    const index = g.fake.requests.length;
    const leaving = new AbortController();
    const sent = fetch(`${g.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(chat()),
      signal: leaving.signal,
    }).catch(() => 'left');
    // The client leaves once its request is at the host, which is still thinking.
    await eventually(() => g.fake.requests.length > index);
    leaving.abort();
    expect(await sent).toBe('left');
    await expect(g.fake.closed(index)).rejects.toThrow();
    await g.settled();
    expect(await lastSettlement(g)).toMatchObject({ status: 'client_abort', inputTokens: 30, outputTokens: 900 });
  });

  it('upstream 500 before any output: 502, and the hold is released in full', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'status', status: 500 });
    const spentBefore = (await g.t.runtime.projections.balance(g.orgId)).spent;
    const res = await request(g.baseUrl).post('/api/v1/chat/completions').set('Authorization', `Bearer ${g.key}`).send(chat());
    expect(res.status).toBe(502);
    await g.settled();
    expect((await g.t.runtime.projections.balance(g.orgId)).spent).toBe(spentBefore);
    expect((await g.t.runtime.projections.recentRequests(g.orgId, 1))[0]).toMatchObject({ status: 'provider_error', cost: 0 });
  });

  it('upstream cut mid-stream: an in-stream error chunk, and what was delivered is billed', async () => {
    g.fake.on(M.gpt.hostModel, {
      kind: 'cut',
      reply: { text: 'alpha beta gamma delta epsilon zeta', usage: null },
      afterPieces: 3,
    });
    const sse = await streamText(g, chat({ stream: true }));
    const chunks = sse.split('\n').filter((l) => l.startsWith('data: '));
    const last = JSON.parse(chunks[chunks.length - 1].slice(6));
    // The status the request would have had, and the kind of failure; no finish reason (none of the format's fits).
    expect(last.choices[0].finish_reason).toBeNull();
    expect(last.error).toEqual({ code: 502, type: 'provider_error', message: expect.stringMatching(/fake-openai/) });
    expect(sse).not.toContain('[DONE]');
    expect(contentOf(sse)).toBe('alpha beta gamma');
    await g.settled();
    const settled = await lastSettlement(g);
    expect(settled).toMatchObject({ status: 'provider_error', outputTokens: Math.ceil('alpha beta gamma'.length / 4) });
  });

  it('malformed SSE from the host: an in-stream error when streaming, 502 otherwise', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'malformed', afterPieces: 2 });
    const sse = await streamText(g, chat({ stream: true }));
    const chunks = sse.split('\n').filter((l) => l.startsWith('data: '));
    const last = JSON.parse(chunks[chunks.length - 1].slice(6));
    expect(last.choices[0].finish_reason).toBeNull();
    expect(last.error).toEqual({ code: 502, type: 'provider_error', message: expect.stringMatching(/not JSON/) });
    // What came before the unreadable message reached the client and is what gets billed.
    const delivered = contentOf(sse);
    expect(delivered).not.toBe('');
    await g.settled();
    expect(await lastSettlement(g)).toMatchObject({ status: 'provider_error', outputTokens: Math.ceil(delivered.length / 4) });
    const res = await request(g.baseUrl).post('/api/v1/chat/completions').set('Authorization', `Bearer ${g.key}`).send(chat());
    expect(res.status).toBe(502);
  });

  it('a huge error page from the host: 502 with a short message, the hold released', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'status', status: 503, body: `<html>${'Service Unavailable '.repeat(200_000)}</html>` });
    const res = await request(g.baseUrl).post('/api/v1/chat/completions').set('Authorization', `Bearer ${g.key}`).send(chat());
    expect(res.status).toBe(502);
    expect(res.body.error.message).toMatch(/Service Unavailable/);
    expect(res.body.error.message.length).toBeLessThan(1000);
    await g.settled();
    expect((await g.t.runtime.projections.recentRequests(g.orgId, 1))[0]).toMatchObject({ status: 'provider_error', cost: 0 });
  });

  it('an error the host reports inside its stream ends the stream with an error chunk', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'stream_error', afterPieces: 2 });
    const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: M.gpt.slug,
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    await expect(
      (async () => {
        for await (const _ of stream) {
          // consume until the error chunk
        }
      })(),
    ).rejects.toThrow(/fake-openai/);
  });

  it('a host that hangs after accepting: the stream ends with a timeout error, nothing stays held', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'hang_after_headers' });
    const sse = await streamText(g, chat({ stream: true }));
    expect(sse).toContain(': keep-alive');
    expect(sse).toMatch(/"error":\{"code":504,"message":"[^"]*","type":"provider_timeout"\}/);
  });

  it('sends keep-alive comments while waiting for a slow first token', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'finally' }, firstByteDelayMs: 450 });
    const sse = await streamText(g, chat({ stream: true }));
    expect(sse.match(/: keep-alive/g)!.length).toBeGreaterThanOrEqual(2);
    expect(contentOf(sse)).toBe('finally');
    expect(sse.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('keeps a stream that falls silent between tokens alive with comments', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'slow words' }, chunkDelayMs: 250 });
    const sse = await streamText(g, chat({ stream: true }));
    const lines = sse.split('\n').filter(Boolean);
    const firstText = lines.findIndex((l) => l.startsWith('data: {') && JSON.parse(l.slice(6)).choices[0]?.delta?.content);
    expect(firstText).toBeGreaterThanOrEqual(0);
    expect(lines.slice(firstText).filter((l) => l === ': keep-alive').length).toBeGreaterThanOrEqual(2);
    expect(contentOf(sse)).toBe('slow words');
  });

  // An empty reply: zero output is believed (for delivered text it is not; see billing-distrust.spec.ts).
  it.each([false, true])('respects an explicit zero usage from the host for an empty reply (streamed: %s)', async (stream) => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: '', usage: { input: 0, output: 0 } } });
    const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
    const ask = { model: M.gpt.slug, messages: [{ role: 'user' as const, content: 'Tell me a long story' }] };
    let usage: OpenAI.CompletionUsage | undefined;
    if (stream) {
      for await (const chunk of await client.chat.completions.create({
        ...ask,
        stream: true,
        stream_options: { include_usage: true },
      })) {
        usage = chunk.usage ?? usage;
      }
    } else {
      usage = (await client.chat.completions.create(ask)).usage;
    }
    expect(usage).toMatchObject({
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: 0,
    });
    await g.settled();
    const settled = await lastSettlement(g);
    expect(settled).toMatchObject({ inputTokens: 0, outputTokens: 0, amount: 0 });
    expect(settled).not.toHaveProperty('usageFlag');
  });

  it('falls back to the next host when the first fails before output, charged at the host that served', async () => {
    g.fake.on('fake-first', { kind: 'status', status: 503 });
    g.fake.on(M.fallback.hostModel, {
      kind: 'reply',
      reply: { text: 'served by the second host', usage: { input: 1000, output: 1000 } },
    });
    const res = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', `Bearer ${g.key}`)
      .send({ model: M.fallback.slug, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    expect(res.body.choices[0].message.content).toBe('served by the second host');
    // 1000 × $0.50/M + 1000 × $0.75/M = 0.00125 credits (the first host's $9/M never applies).
    expect(res.body.usage.cost).toBe(0.00125);
    const models = g.fake.requests.slice(-2).map((r) => r.body.model);
    expect(models).toEqual(['fake-first', M.fallback.hostModel]);
    await g.settled();
    expect(await lastSettlement(g)).toMatchObject({ host: 'fake-openai', hostModel: M.fallback.hostModel, amount: 1_250_000 });
  });

  it.each([
    ['answers 429', 'fake-first', { kind: 'status' as const, status: 429 }],
    ['refuses the connection', null, null],
  ])('falls back when the first host %s', async (_, firstModel, behaviour) => {
    if (firstModel && behaviour) g.fake.on(firstModel, behaviour);
    const slug = firstModel ? M.fallback.slug : M.fallbackAfterDownHost.slug;
    g.fake.on(M.fallback.hostModel, { kind: 'reply', reply: { text: 'second', usage: { input: 2000, output: 400 } } });
    const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: slug, messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0].message.content).toBe('second');
    // 2000 × $0.50/M + 400 × $0.75/M = 0.0013 credits, at the prices of the host that served.
    expect(completion.usage).toMatchObject({ cost: 0.0013 });
    await g.settled();
    expect(await lastSettlement(g)).toMatchObject({ host: 'fake-openai', amount: 1_300_000 });
  });

  it('falls back when the first host never answers', async () => {
    g.fake.on('fake-first', { kind: 'hang' });
    g.fake.on(M.fallback.hostModel, { kind: 'reply', reply: { text: 'second' } });
    const res = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', `Bearer ${g.key}`)
      .send({ model: M.fallback.slug, messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect(res.status).toBe(200);
    expect(contentOf(res.text)).toBe('second');
  });
});
