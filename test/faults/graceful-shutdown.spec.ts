import { request as httpRequest, type IncomingMessage } from 'node:http';
import { auditLedger } from '../../src/audit/ledger-audit';
import { loadConfig } from '../../src/config/config';
import type { ReservationReleased, ReservationSettled } from '../../src/ledger/ledger.events';
import { openRuntime } from '../../src/runtime/runtime';
import { OpenRequests } from '../../src/inference/in-flight';
import { endOpenRequests } from '../../src/app';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, startGateway, TEST_EMBEDDING_MODELS, TEST_MODELS } from '../support/gateway';
import { Child, eventually, startService } from '../support/processes';
import { chatCompletion, openCountingStream } from '../support/streams';
import { CHAT_COMPLETIONS, MESSAGES, NATIVE, RESPONSES, sseEvents, type Surface } from '../support/surfaces';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { createKey } from '../support/keys';

/**
 * SIGTERM with 20 streams open, as a process manager stops the service: the streams finish within
 * the grace period, or are ended at its end — told so in their last event, billed for what they
 * delivered, recorded as `shutdown` (not as their clients leaving); a request answered in one piece
 * still open then gets a 503 in its surface's format with Retry-After, its hold released; so do an
 * embeddings request (its hold released too), a token count and a management request, each in its
 * route's format. Every reservation is settled before the log closes (none left to expire), the
 * audit is clean, and the exit code is 0.
 */

const M = TEST_MODELS;
const STREAMS = 20;
const WORDS = 'one two three four five six seven eight nine ten eleven twelve'.split(' ');

let fake: FakeUpstream;
let t: TestRuntime;
let env: Record<string, string>;
let service: Child | null = null;

beforeAll(async () => {
  fake = await startFakeUpstream();
  // Long reservations, no sweeper in the test's own runtime: a reservation resolved is one the service settled.
  t = await openTestRuntime();
  env = serviceEnv(t, fake);
  await t.runtime.close();
});
afterAll(async () => {
  service?.process.kill('SIGKILL');
  await fake.close();
  await t.cleanup();
});

/** The service on the shared log, an organization and key made through the operator's runtime. */
async function start(grace: number, more: Record<string, string> = {}): Promise<{ base: string; secret: string; orgId: string }> {
  const operator = await openRuntime(loadConfig(env));
  const orgId = await fundedOrganization(operator, 100_000_000_000);
  const { secret } = await createKey(operator, orgId, 'stopping');
  await operator.close();
  const started = await startService({ ...env, SHUTDOWN_GRACE_MS: String(grace), ...more });
  service = started.service;
  return { base: started.base, secret, orgId };
}

/** After the service has gone: the log replayed by a fresh runtime. */
async function afterwards(orgId: string) {
  const runtime = await openRuntime(loadConfig(env));
  try {
    await runtime.projector.catchUp();
    const events = await runtime.events.readAll(0, 1_000_000);
    const ofOrg = (type: string) => events.filter((e) => e.type === type && (e.data as { orgId: string }).orgId === orgId);
    return {
      balance: await runtime.projections.balance(orgId),
      settled: ofOrg('ReservationSettled') as unknown as ReservationSettled[],
      released: ofOrg('ReservationReleased') as unknown as ReservationReleased[],
      audit: await auditLedger(runtime.events, runtime.projections),
    };
  } finally {
    await runtime.close();
  }
}

it('SIGTERM with 20 streams open, all able to finish within the grace period: all complete, all billed in full, exit 0, audit clean', async () => {
  const { base, secret, orgId } = await start(20_000);
  fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: WORDS.slice(0, 6).join(' ') }, chunkDelayMs: 100 });
  const streams = await Promise.all(Array.from({ length: STREAMS }, () => openCountingStream(base, secret, M.gpt.slug)));
  service!.process.kill('SIGTERM');
  const endings = await Promise.all(streams.map((s) => s.ended));
  expect(endings).toEqual(Array(STREAMS).fill('completed'));
  expect(await service!.exited()).toBe(0);
  expect(service!.output()).toContain('model gateway stopped');

  const { balance, settled, audit } = await afterwards(orgId);
  expect(settled).toHaveLength(STREAMS);
  expect(settled.map((s) => s.data.status)).toEqual(Array(STREAMS).fill('ok'));
  expect(balance.reserved + balance.pending).toBe(0);
  expect(audit.differences).toEqual([]);
}, 60_000);

/** The service's request lines (one per request, when it ended), by request id. */
function requestLines(): Map<string, { status: number; outcome?: string; error?: string }> {
  const lines = new Map<string, { status: number; outcome?: string; error?: string }>();
  for (const text of service!.output().split('\n')) {
    if (!text.startsWith('{')) continue;
    const line = JSON.parse(text) as { msg?: string; requestId?: string; status: number; outcome?: string; error?: string };
    if (line.msg === 'request' && line.requestId) lines.set(line.requestId, line);
  }
  return lines;
}

it("SIGTERM with 20 streams that would outlast the grace period: ended at its end with their format's error event, each settled for what it delivered as `shutdown`, exit 0, audit clean", async () => {
  const grace = 1_000;
  const { base, secret, orgId } = await start(grace);
  // A word every 400 ms for about 5 s: still streaming when the grace period ends.
  fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: WORDS.join(' ') }, chunkDelayMs: 400 });
  const streams = await Promise.all(Array.from({ length: STREAMS }, () => openCountingStream(base, secret, M.gpt.slug)));
  const signalled = Date.now();
  service!.process.kill('SIGTERM');
  const endings = await Promise.all(streams.map((s) => s.ended));
  const cutAfter = Date.now() - signalled;
  // Not completed (no [DONE]), at the grace period's end, not at the streams' own end (about 5 s)…
  expect(endings).toEqual(Array(STREAMS).fill('cut'));
  expect(cutAfter).toBeGreaterThanOrEqual(grace - 50);
  expect(cutAfter).toBeLessThan(4_000);
  // …each told why in its last event, in the chat-completions format, after the words it had.
  for (const stream of streams) {
    const events = sseEvents(stream.body());
    expect(CHAT_COMPLETIONS.streamError(stream.body())).toEqual({
      type: 'service_unavailable',
      message: expect.stringMatching(
        /^the gateway is shutting down and this request was still running when its grace period ended/,
      ),
    });
    expect(events.at(-1)!.data.error).toBeDefined();
    expect(CHAT_COMPLETIONS.read(stream.body(), true).text).toMatch(/^one two/);
  }
  expect(await service!.exited()).toBe(0);
  expect(service!.output()).toContain(`shutdown grace period over: ${STREAMS} request(s) still open ended as shutdown`);
  // Each request's line: its stream went out as 200 and ended as the shutdown ended it, not as a client closing it (499).
  const lines = requestLines();
  for (const stream of streams) expect(lines.get(stream.requestId)).toMatchObject({ status: 200, outcome: 'shutdown' });

  const { balance, settled, audit } = await afterwards(orgId);
  // Every reservation settled by the stopping service (none left to expire), as a cut stream: what was delivered is billed.
  expect(settled).toHaveLength(STREAMS);
  for (const s of settled) {
    expect(s.data.status).toBe('shutdown');
    expect(s.data.attempts!.at(-1)).toMatchObject({ host: 'fake-openai', reason: 'shutdown' });
    expect(s.data.outputTokens).toBeGreaterThan(0);
    expect(s.data.outputTokens).toBeLessThan(WORDS.length);
  }
  expect(balance.reserved + balance.pending).toBe(0);
  expect(audit.differences).toEqual([]);
}, 60_000);

/** Gemini's generateContent, as Google's client sends it (the key in x-goog-api-key). */
const GEMINI = {
  url: (base: string, slug: string) => `${base}/api/v1beta/models/${slug}:generateContent`,
  headers: (key: string) => ({ 'x-goog-api-key': key }),
  body: { contents: [{ role: 'user', parts: [{ text: 'Hello' }] }], generationConfig: { maxOutputTokens: 100 } },
};

it('SIGTERM with a request answered in one piece still open at the end of the grace period, on each surface: a 503 in its format with Retry-After, its hold released as `shutdown`; a stream not yet started: the same 503', async () => {
  const grace = 1_000;
  const { base, secret, orgId } = await start(grace);
  // The hosts take the requests and never answer: each is still open when the grace period ends.
  fake.on(M.gpt.hostModel, { kind: 'hang' });
  fake.on(M.claude.hostModel, { kind: 'hang' });
  const calledBefore = fake.requests.length;
  const post = (url: string, headers: Record<string, string>, body: unknown) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const onSurface = (surface: Surface, slug: string, stream = false) =>
    post(`${base}/api/v1/${surface.path(slug)}`, surface.headers(secret), surface.body(slug, stream, { maxTokens: 100 }));
  const asked = {
    'chat-completions': onSurface(CHAT_COMPLETIONS, M.gpt.slug),
    // The messages format on a host of that format: passed through whole.
    messages: onSurface(MESSAGES, M.claude.slug),
    responses: onSurface(RESPONSES, M.gpt.slug),
    gemini: post(GEMINI.url(base, M.gpt.slug), GEMINI.headers(secret), GEMINI.body),
    native: onSurface(NATIVE, M.gpt.slug),
    // No event yet: its headers have not gone out (they would after SSE_KEEPALIVE_MS, 15 s).
    'a stream not started': onSurface(CHAT_COMPLETIONS, M.gpt.slug, true),
  };
  const names = Object.keys(asked);
  // Every one admitted and at its host before the signal.
  await eventually(() => fake.requests.length === calledBefore + names.length);
  const signalled = Date.now();
  service!.process.kill('SIGTERM');
  const answers = await Promise.all(
    Object.values(asked).map(async (answer) => {
      const res = await answer;
      return { res, text: await res.text(), after: Date.now() - signalled };
    }),
  );
  const shuttingDown = /^the gateway is shutting down and this request was still running when its grace period ended/;
  const byName = Object.fromEntries(names.map((name, i) => [name, answers[i]]));
  for (const [name, { res, after }] of Object.entries(byName)) {
    expect([name, res.status, res.headers.get('retry-after')]).toEqual([name, 503, '1']);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    // At the grace period's end, not before.
    expect(after).toBeGreaterThanOrEqual(grace - 50);
  }
  // Each in its own wire format.
  expect(CHAT_COMPLETIONS.error(byName['chat-completions'].text)).toEqual({
    type: 'service_unavailable',
    message: expect.stringMatching(shuttingDown),
  });
  expect(JSON.parse(byName['chat-completions'].text).error.code).toBe('unavailable');
  expect(MESSAGES.error(byName.messages.text)).toEqual({
    type: 'overloaded_error',
    message: expect.stringMatching(shuttingDown),
  });
  expect(RESPONSES.error(byName.responses.text)).toEqual({
    type: 'service_unavailable',
    message: expect.stringMatching(shuttingDown),
  });
  expect(JSON.parse(byName.gemini.text)).toEqual({
    error: { code: 503, status: 'UNAVAILABLE', message: expect.stringMatching(shuttingDown) },
  });
  expect(NATIVE.error(byName.native.text)).toEqual({ type: 'unavailable', message: expect.stringMatching(shuttingDown) });
  expect(CHAT_COMPLETIONS.error(byName['a stream not started'].text)).toMatchObject({ type: 'service_unavailable' });
  // The host calls were given up (their connections closed), not left running.
  await Promise.all(names.map((_, i) => fake.closed(calledBefore + i)));
  expect(await service!.exited()).toBe(0);
  const lines = requestLines();
  for (const { res } of answers)
    expect(lines.get(res.headers.get('x-request-id')!)).toMatchObject({ status: 503, outcome: 'shutdown' });

  const { balance, settled, released, audit } = await afterwards(orgId);
  // Nothing was delivered: every hold returned in full, each release recorded as the shutdown's, none settled or left to expire.
  expect(settled).toEqual([]);
  expect(released.map((r) => r.data.requestId).sort()).toEqual(answers.map((a) => a.res.headers.get('x-request-id')).sort());
  for (const r of released) {
    expect(r.data).toMatchObject({ status: 'shutdown', reason: 'shutdown' });
    expect(r.data.attempts!.at(-1)).toMatchObject({ reason: 'shutdown', status: null });
  }
  expect(balance).toMatchObject({ reserved: 0, pending: 0, spent: 0 });
  expect(audit.differences).toEqual([]);
}, 60_000);

/**
 * A request whose body has not come yet, held open at the service (the client waits for the server's
 * `100 Continue`, then sends nothing): resolves with it once the server has taken the request (its
 * hooks have run), and with its answer's promise.
 */
function heldWithoutBody(
  url: string,
  headers: Record<string, string>,
): Promise<{ answer: Promise<{ res: IncomingMessage; text: string }>; cut: () => void }> {
  return new Promise((taken, failed) => {
    const req = httpRequest(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '1000', expect: '100-continue', ...headers },
    });
    let answerCut: (error: Error) => void = () => undefined;
    const answer = new Promise<{ res: IncomingMessage; text: string }>((resolve, reject) => {
      answerCut = reject;
      req.once('response', (res) => {
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => parts.push(chunk));
        res.once('end', () => {
          req.destroy();
          resolve({ res, text: Buffer.concat(parts).toString('utf8') });
        });
        res.once('error', reject);
      });
    });
    // Cut instead of answered: the answer fails (the test with it).
    req.once('error', (error) => {
      failed(error);
      answerCut(error);
    });
    // Node's server writes its 100 Continue as it hands the request to its listener: Fastify has it then.
    req.once('continue', () => taken({ answer, cut: () => req.destroy() }));
    req.flushHeaders();
  });
}

it("SIGTERM with an embeddings request, a token count and a management request still open at the end of the grace period: each a 503 in its route's format with Retry-After; the embeddings hold released as `shutdown`, audit clean", async () => {
  const grace = 1_000;
  const { base, secret, orgId } = await start(grace);
  const E = TEST_EMBEDDING_MODELS;
  // The hosts take the calls and never answer: each is still open when the grace period ends.
  fake.on(E.embed.hostModel, { kind: 'hang' });
  fake.on(M.claude.hostModel, { kind: 'hang' });
  const calledBefore = fake.requests.length;
  const post = async (url: string, headers: Record<string, string>, body: unknown) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { res, text: await res.text() };
  };
  const embeddings = post(
    `${base}/api/v1/embeddings`,
    { authorization: `Bearer ${secret}` },
    { model: E.embed.slug, input: 'hello there' },
  );
  const counting = post(`${base}/api/v1/messages/count_tokens`, MESSAGES.headers(secret), {
    model: M.claude.slug,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  // A key being made (its body still on its way): a management request open at the grace period's end.
  const management = await heldWithoutBody(`${base}/api/v1/keys`, { authorization: `Bearer ${secret}` });
  // The embeddings and the count at their host before the signal.
  await eventually(() => fake.requests.length === calledBefore + 2);
  expect(
    fake.requests
      .slice(calledBefore)
      .map((r) => r.path)
      .sort(),
  ).toEqual(['/v1/embeddings', '/v1/messages/count_tokens']);
  const signalled = Date.now();
  service!.process.kill('SIGTERM');
  const after = <T>(answer: Promise<T>) => answer.then((a) => ({ ...a, after: Date.now() - signalled }));
  const [embedded, counted, managed] = await Promise.all([after(embeddings), after(counting), after(management.answer)]);
  const answers = {
    embeddings: { status: embedded.res.status, headers: Object.fromEntries(embedded.res.headers), after: embedded.after },
    count_tokens: { status: counted.res.status, headers: Object.fromEntries(counted.res.headers), after: counted.after },
    management: { status: managed.res.statusCode, headers: managed.res.headers as Record<string, string>, after: managed.after },
  };
  for (const [name, { status, headers, after: at }] of Object.entries(answers)) {
    expect([name, status, headers['retry-after']]).toEqual([name, 503, '1']);
    expect(headers['content-type']).toMatch(/^application\/json/);
    // At the grace period's end, not before.
    expect(at).toBeGreaterThanOrEqual(grace - 50);
  }
  const shuttingDown = /^the gateway is shutting down and this request was still running when its grace period ended/;
  // Embeddings in OpenAI's format, the count in Anthropic's, the management request in its route's (OpenAI's).
  expect(JSON.parse(embedded.text)).toEqual({
    error: { type: 'service_unavailable', code: 'unavailable', param: null, message: expect.stringMatching(shuttingDown) },
  });
  expect(MESSAGES.error(counted.text)).toEqual({ type: 'overloaded_error', message: expect.stringMatching(shuttingDown) });
  expect(JSON.parse(managed.text)).toEqual({
    error: {
      type: 'service_unavailable',
      code: 'unavailable',
      param: null,
      // A write may have taken effect: the client is told to check first.
      message: expect.stringMatching(
        /its grace period ended: it may or may not have taken effect; check before sending it again/,
      ),
    },
  });
  // The host calls were given up (their connections closed), not left running.
  await Promise.all([fake.closed(calledBefore), fake.closed(calledBefore + 1)]);
  expect(await service!.exited()).toBe(0);
  expect(service!.output()).toContain('shutdown grace period over: 3 request(s) still open ended as shutdown');
  const lines = requestLines();
  const embeddingsId = embedded.res.headers.get('x-request-id')!;
  for (const id of [embeddingsId, counted.res.headers.get('x-request-id')!, String(managed.res.headers['x-request-id'])])
    expect(lines.get(id)).toMatchObject({ status: 503, outcome: 'shutdown' });

  const { balance, settled, released, audit } = await afterwards(orgId);
  // The embeddings hold returned in full, recorded as the shutdown's; nothing settled, none left to expire.
  expect(settled).toEqual([]);
  expect(released.map((r) => r.data.requestId)).toEqual([embeddingsId]);
  expect(released[0].data).toMatchObject({ status: 'shutdown', reason: 'shutdown' });
  expect(released[0].data.attempts).toEqual([expect.objectContaining({ host: 'fake-openai', reason: 'shutdown', status: null })]);
  expect(balance).toMatchObject({ reserved: 0, pending: 0, spent: 0 });
  expect(audit.differences).toEqual([]);
}, 60_000);

it('SIGTERM with SHUTDOWN_DRAIN_MS: not ready at once, yet a new request is still served until the drain ends; then exit 0, audit clean', async () => {
  const { base, secret, orgId } = await start(5_000, { SHUTDOWN_DRAIN_MS: '4000' });
  fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'still here' } });
  service!.process.kill('SIGTERM');
  await eventually(async () => (await fetch(`${base}/health/ready`)).status === 503);
  // A load balancer that has not yet seen readiness fail sends one more, on a new connection.
  const late = await fetch(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 }),
  });
  expect(late.status).toBe(200);
  expect(((await late.json()) as { choices: { message: { content: string } }[] }).choices[0].message.content).toBe('still here');
  expect(await service!.exited()).toBe(0);
  expect(service!.output()).toContain('still taking requests for 4000 ms');

  const { balance, settled, audit } = await afterwards(orgId);
  expect(settled.map((s) => s.data.status)).toEqual(['ok']);
  expect(balance.reserved + balance.pending).toBe(0);
  expect(audit.differences).toEqual([]);
}, 60_000);

it('the grace period ended with an embeddings request at its host: its answer is awaited until its hold is released in the log as `shutdown` and its 503 written', async () => {
  const g = await startGateway();
  let cutOther = (): void => undefined;
  try {
    g.fake.on(TEST_EMBEDDING_MODELS.embed.hostModel, { kind: 'hang' });
    const called = g.fake.requests.length;
    const asked = fetch(`${g.baseUrl}/api/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify({ model: TEST_EMBEDDING_MODELS.embed.slug, input: 'hi' }),
    });
    await eventually(() => g.fake.requests.length === called + 1);
    // Another request being answered (its body still on its way, on a route that ends its own: not ended
    // before it reaches its host call), as under load: the release is written by the log's worker thread.
    const other = await heldWithoutBody(`${g.baseUrl}/api/v1/chat/completions`, { authorization: `Bearer ${g.key}` });
    other.answer.catch(() => undefined);
    cutOther = other.cut;
    const { ended, answered } = endOpenRequests(g.app, 10_000);
    expect(ended).toBe(1);
    await answered;
    // Once the answering is over (main cuts what is left then), the release is in the log: its host call's giving up was awaited.
    const events = await g.t.runtime.events.readAll(0, 1_000_000);
    const released = events.filter((e) => e.type === 'ReservationReleased');
    expect(released.map((e) => (e.data as { status: string }).status)).toEqual(['shutdown']);
    const res = await asked;
    expect([res.status, res.headers.get('retry-after')]).toEqual([503, '1']);
    expect((released[0].data as { requestId: string }).requestId).toBe(res.headers.get('x-request-id'));
  } finally {
    // Open, it would hold the gateway's close.
    cutOther();
    await g.close();
  }
}, 20_000);

describe('past the grace period', () => {
  it('a request reaching its host call after the grace period ended (it was still being admitted) is ended at once: no host called, a 503 with Retry-After, its hold released as `shutdown`', async () => {
    const g = await startGateway();
    try {
      // As at the grace period's end: nothing open to end yet.
      expect(g.app.get(OpenRequests, { strict: false }).endAll()).toBe(0);
      const called = g.fake.requests.length;
      const res = await chatCompletion(g.baseUrl, g.key, { max_tokens: 10 });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(CHAT_COMPLETIONS.error(await res.text()).message).toMatch(/^the gateway is shutting down/);
      expect(g.fake.requests.length).toBe(called);
      expect(await g.logged(res.headers.get('x-request-id')!)).toMatchObject({
        status: 'shutdown',
        cost: 0,
        host: 'fake-openai',
      });
      await g.settled();
      expect((await g.audit()).differences).toEqual([]);
    } finally {
      await g.close();
    }
  });

  it('embeddings and a token count reaching their host call after it, and a management request arriving after it: each a 503 with Retry-After at once in its format, no host called, the embeddings hold released as `shutdown`', async () => {
    const g = await startGateway();
    try {
      expect(g.app.get(OpenRequests, { strict: false }).endAll()).toBe(0);
      const called = g.fake.requests.length;
      const post = (path: string, headers: Record<string, string>, body: unknown) =>
        fetch(`${g.baseUrl}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(body),
        });
      const embedded = await post(
        '/api/v1/embeddings',
        { authorization: `Bearer ${g.key}` },
        { model: TEST_EMBEDDING_MODELS.embed.slug, input: 'hi' },
      );
      const counted = await post('/api/v1/messages/count_tokens', MESSAGES.headers(g.key), {
        model: M.claude.slug,
        messages: [{ role: 'user', content: 'Hello' }],
      });
      const listed = await fetch(`${g.baseUrl}/api/v1/keys`, { headers: { authorization: `Bearer ${g.key}` } });
      for (const res of [embedded, counted, listed]) {
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('1');
      }
      expect(CHAT_COMPLETIONS.error(await embedded.text()).message).toMatch(/^the gateway is shutting down/);
      expect(MESSAGES.error(await counted.text())).toMatchObject({ type: 'overloaded_error' });
      // A read: simply sent again.
      expect(CHAT_COMPLETIONS.error(await listed.text()).message).toMatch(/grace period ended: send it again/);
      expect(g.fake.requests.length).toBe(called);
      expect(await g.logged(embedded.headers.get('x-request-id')!)).toMatchObject({
        status: 'shutdown',
        cost: 0,
        host: 'fake-openai',
      });
      await g.settled();
      expect((await g.audit()).differences).toEqual([]);
    } finally {
      await g.close();
    }
  });
});
