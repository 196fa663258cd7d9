import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lastValueFrom, tap } from 'rxjs';
import type { CanonicalEvent, CanonicalRequest, HostError } from '../../src/canonical/canonical';
import { HostTransport, type HostEndpoint } from '../../src/hosts/transport';
import { googleCredential } from '../../src/hosts/vertex/google-credential';
import { vertexHost as vertexKind } from '../../src/hosts/vertex/vertex.host';
import { signatureOf } from '../support/fake-upstream';
import { thoughtSignatureOf } from '../support/fakes/gemini';
import { FAKE_TOKEN_LIFETIME_S, GOOGLE_TOKEN_AUDIENCE, testServiceAccount } from '../support/fakes/google-oauth';
import { CLOUD_PLATFORM_SCOPE } from '../support/fakes/vertex';
import { auditThenClose, startGateway, TestGateway } from '../support/gateway';
import { calledOnce, modelEntry, vertexAccount, vertexHost, withOwn } from '../support/spec-catalogue';
import { CHAT_COMPLETIONS, GENERATE_CONTENT, MESSAGES, SURFACES, WEATHER } from '../support/surfaces';
import { tempDir } from '../support/temp';
import { throughGateway } from '../support/through-gateway';
import { hostUnderTest, TEXT, THINKING } from './support/host-under-test';

/**
 * Claude and Gemini on a `vertex` host, through every client surface, whole and streamed: the call
 * goes to Vertex AI's Anthropic publisher (rawPredict / streamRawPredict, the model in the path,
 * Vertex's anthropic_version in the body) or Google's (generateContent / streamGenerateContent over
 * SSE) with a Google access token the host's service account got from the (fake) token endpoint
 * once and reuses; what the host replies reaches the client; every token class is billed at the
 * catalogue's prices; a cut stream is billed for what was delivered; a failure before output (a
 * 429, a 5xx, a 401, no token to be had) falls back; absurd usage is not believed.
 */

/** Gemini 2.5 Pro on Google's publisher, at its list prices up to 200,000 input tokens. */
const GEMINI = { slug: 'test/vertex-gemini', id: 'f1f1f1f1-f1f1-4f1f-8f1f-f1f1f1f1f1f1', hostModel: 'gemini-2.5-pro' };
const GEMINI_PRICES = { input: '1.25', cacheRead: '0.125', output: '10.00' };
/** Two hosts: the first (`fake-vertex-flaky`) fails before output; the second serves as for FALLBACK. */
const GEMINI_FALLBACK = {
  slug: 'test/vertex-gemini-fallback',
  id: 'f2f2f2f2-f2f2-4f2f-8f2f-f2f2f2f2f2f2',
  firstHostModel: 'gemini-first',
  hostModel: 'gemini-second',
};

const CLAUDE = {
  slug: 'test/vertex-claude',
  id: 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  hostModel: 'claude-sonnet-4-5@20250929',
};
/** Two hosts: the first (`fake-vertex-flaky`, at $9/M) fails before output; the second serves at $0.50/M and $0.75/M. */
const FALLBACK = {
  slug: 'test/vertex-fallback',
  id: 'cccccccc-cccc-4ccc-8ccc-cccccccccccc',
  firstHostModel: 'claude-first@20250101',
  hostModel: 'claude-second@20250101',
};
/** Its one host's token endpoint does not answer (nothing listens there). */
const TOKENLESS = { slug: 'test/vertex-tokenless', id: 'dddddddd-dddd-4ddd-8ddd-dddddddddddd', hostModel: 'claude-tokenless@1' };
/** Two hosts: the first can get no token; the second serves as for `FALLBACK`. */
const TOKENLESS_FIRST = {
  slug: 'test/vertex-tokenless-first',
  id: 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee',
  hostModel: 'claude-after-tokenless@1',
};

/** Claude Sonnet 4.5's list prices on Vertex AI's global endpoint, per million tokens: every class stated. */
const PRICES = { input: '3.00', output: '15.00', cacheRead: '0.30', cacheWrite: '3.75', cacheWrite1h: '6.00' };

const CALL = { id: 'toolu_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' };

/** Where the hosts' service-account key files are written. */
const files = tempDir('vertex-keys');

const model = (m: { slug: string; id: string }, hosts: unknown[]) =>
  // Room for a thinking budget (at least 1,024 tokens) under the cap.
  modelEntry(m, hosts, { contextLength: 200_000, maxOutputTokens: 8192 });

const catalogue = withOwn((fake) => {
  const cheap = { input: '0.50', output: '0.75' };
  return {
    hosts: [
      vertexHost(fake, 'fake-vertex', files.path),
      vertexHost(fake, 'fake-vertex-flaky', files.path),
      // Port 1: nothing listens, so the token request is refused at once.
      vertexHost(fake, 'fake-vertex-tokenless', files.path, 'http://127.0.0.1:1/token'),
    ].map(calledOnce),
    models: [
      model(CLAUDE, [{ host: 'fake-vertex', model: CLAUDE.hostModel, pricing: PRICES }]),
      model(FALLBACK, [
        { host: 'fake-vertex-flaky', model: FALLBACK.firstHostModel, pricing: { input: '9.00', output: '9.00' } },
        { host: 'fake-vertex', model: FALLBACK.hostModel, pricing: cheap },
      ]),
      model(TOKENLESS, [{ host: 'fake-vertex-tokenless', model: TOKENLESS.hostModel, pricing: cheap }]),
      model(GEMINI, [{ host: 'fake-vertex', model: GEMINI.hostModel, pricing: GEMINI_PRICES }]),
      model(GEMINI_FALLBACK, [
        { host: 'fake-vertex-flaky', model: GEMINI_FALLBACK.firstHostModel, pricing: { input: '9.00', output: '9.00' } },
        { host: 'fake-vertex', model: GEMINI_FALLBACK.hostModel, pricing: cheap },
      ]),
      model(TOKENLESS_FIRST, [
        { host: 'fake-vertex-tokenless', model: 'claude-never-called@1', pricing: { input: '9.00', output: '9.00' } },
        { host: 'fake-vertex', model: TOKENLESS_FIRST.hostModel, pricing: cheap },
      ]),
    ],
  };
});

let g: TestGateway;
/** The gateway's log, to look for credentials in. */
const logged: string[] = [];
beforeAll(async () => {
  g = await startGateway({ catalogue, logStream: { write: (line: string) => void logged.push(line) } });
});
afterAll(async () => {
  try {
    await auditThenClose(g);
  } finally {
    files.cleanup();
  }
});

const through = throughGateway(() => g);
const { call, send, post, settlementOf } = through;
const claudeHost = hostUnderTest(through, { model: CLAUDE, fallback: FALLBACK });
const geminiHost = hostUnderTest(through, { model: GEMINI, fallback: GEMINI_FALLBACK });

/** The token requests a host's service account made so far. */
const tokenRequests = (host: string) => g.fake.googleOAuth.requests.filter((claims) => claims.iss === vertexAccount(host));

describe.each(SURFACES)('the $name surface on a vertex host serving Claude', (surface) => {
  describe.each([false, true])('streamed: %s', (stream) => {
    it('is sent to the Anthropic publisher’s model with a Google token, and gets the text back', async () => {
      const { out, upstream } = await claudeHost.answers(surface, stream, { text: TEXT });
      expect(out.text).toBe(TEXT);
      expect(upstream.path).toBe(
        `/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/${CLAUDE.hostModel}:${stream ? 'streamRawPredict' : 'rawPredict'}`,
      );
      expect(upstream.headers.authorization).toMatch(/^Bearer ya29\.fake-/);
      expect(upstream.headers).not.toHaveProperty('x-api-key');
      expect(upstream.body).not.toHaveProperty('model');
      // The Messages client's own cap, else the model's.
      const cap = surface.name === 'messages' ? 4096 : 8192;
      expect(upstream.body).toMatchObject({ anthropic_version: 'vertex-2023-10-16', stream, max_tokens: cap });
      if (surface.name === 'messages') {
        // The client's own body, whole: only the model taken out (it is in the path) and the version put in.
        const { model: _slug, ...own } = surface.body(CLAUDE.slug, stream);
        expect(upstream.body).toEqual({ anthropic_version: 'vertex-2023-10-16', ...own });
      } else expect(upstream.body.messages).toEqual([{ role: 'user', content: 'Hello' }]);
      if (surface.name !== 'native') expect(upstream.body.system).toBe('Be brief.');
    });

    if (surface.tools) {
      it('carries a tool call with its arguments, and the reasoning before it (its signature to a Messages client)', async () => {
        const { out, upstream } = await claudeHost.answers(
          surface,
          stream,
          { thinking: THINKING, toolCalls: [CALL] },
          { tools: true },
        );
        expect(out.calls).toEqual([CALL]);
        expect(out.reasoning).toBe(THINKING);
        if (surface.name === 'messages') expect(out.signatures).toEqual([signatureOf(THINKING)]);
        expect(upstream.body.tools).toEqual([
          { name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters },
        ]);
        expect(upstream.body.thinking).toMatchObject({ type: 'enabled' });
      });
    }

    it('bills every token class at its price: ceil(Σ tokens × price / 10^6) nano-credits', async () => {
      const usage = { input: 101, cacheRead: 20_003, cacheWrite: 1_007, cacheWrite1h: 2_011, output: 503 };
      const { res } = await claudeHost.answers(surface, stream, { text: TEXT, usage });
      // In nano-credits per million tokens: $3 = 3×10^9, $0.30, $3.75, $6, $15.
      const sum = 101 * 3e9 + 20_003 * 0.3e9 + 1_007 * 3.75e9 + 2_011 * 6e9 + 503 * 15e9;
      expect(await settlementOf(res)).toMatchObject({
        host: 'fake-vertex',
        inputTokens: 101,
        cacheReadTokens: 20_003,
        cacheWriteTokens: 1_007,
        cacheWrite1hTokens: 2_011,
        outputTokens: 503,
        amount: Math.ceil(sum / 1e6),
      });
    });

    it(
      'falls back to the next host on a 429, a 5xx or a 401 before output, answered in Google’s format',
      // 1,000 × $0.50 + 1,000 × $0.75 = $1,250 per million
      claudeHost.failsBeforeOutput(surface, stream, [429, 500, 503, 401], { host: 'fake-vertex', amount: 1_250_000 }),
    );
  });

  it(
    'bills a cut stream for what was delivered',
    claudeHost.cutsItsStream(surface, { usage: null, then: ({ text }) => expect(text).not.toContain('four') }),
  );

  it('fails a stream whose host reports an error after output, billing what was delivered', claudeHost.failsAfterOutput(surface));

  it(
    'does not believe absurd usage',
    claudeHost.reportsAbsurdUsage(surface, '{"input_tokens":12,"cache_read_input_tokens":0,"output_tokens":1e12}'),
  );
});

describe.each(SURFACES)('the $name surface on a vertex host serving Gemini', (surface) => {
  describe.each([false, true])('streamed: %s', (stream) => {
    it('is sent to Google’s publisher’s model with a Google token, and gets the text back', async () => {
      const { out, upstream } = await geminiHost.answers(surface, stream, { text: TEXT });
      expect(out.text).toBe(TEXT);
      const method = stream ? 'streamGenerateContent' : 'generateContent';
      expect(upstream.path).toBe(
        `/v1/projects/test-project/locations/us-east5/publishers/google/models/gemini-2.5-pro:${method}`,
      );
      expect(upstream.headers.authorization).toMatch(/^Bearer ya29\.fake-/);
      expect(upstream.headers).not.toHaveProperty('x-goog-api-key');
      expect(upstream.body).not.toHaveProperty('model');
      expect(upstream.body.contents).toEqual([{ role: 'user', parts: [{ text: 'Hello' }] }]);
      expect(upstream.body.generationConfig).toMatchObject({ maxOutputTokens: surface.name === 'messages' ? 4096 : 8192 });
      if (surface.name !== 'native') expect(upstream.body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
    });

    if (surface.tools) {
      it('carries a tool call with its arguments, and the thoughts before it', async () => {
        const { out, upstream } = await geminiHost.answers(
          surface,
          stream,
          { thinking: THINKING, toolCalls: [CALL] },
          { tools: true },
        );
        expect(out.calls.map(({ name, arguments: args }) => ({ name, arguments: JSON.parse(args) }))).toEqual([
          { name: CALL.name, arguments: JSON.parse(CALL.arguments) },
        ]);
        expect(out.reasoning).toBe(THINKING);
        expect(upstream.body.tools).toEqual([
          {
            functionDeclarations: [
              { name: WEATHER.name, description: WEATHER.description, parametersJsonSchema: WEATHER.parameters },
            ],
          },
        ]);
        expect(upstream.body.generationConfig.thinkingConfig).toMatchObject({ includeThoughts: true });
      });
    }

    it('bills every token class Gemini reports at its price: ceil(Σ tokens × price / 10^6) nano-credits', async () => {
      // 20,011 of the prompt's tokens read from the cache; 523 output tokens, 211 of them thoughts.
      const usage = { input: 1_237, cacheRead: 20_011, output: 523, reasoning: 211 };
      const { res } = await geminiHost.answers(surface, stream, { text: TEXT, usage });
      // In nano-credits per million tokens: $1.25 = 1.25×10^9, $0.125, $10.
      const sum = 1_237 * 1.25e9 + 20_011 * 0.125e9 + 523 * 10e9;
      expect(await settlementOf(res)).toMatchObject({
        host: 'fake-vertex',
        inputTokens: 1_237,
        cacheReadTokens: 20_011,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        outputTokens: 523,
        amount: Math.ceil(sum / 1e6),
      });
    });

    it(
      'falls back to the next host on a 429, a 5xx or a 401 before output',
      geminiHost.failsBeforeOutput(surface, stream, [429, 500, 503, 401], { host: 'fake-vertex', amount: 1_250_000 }),
    );
  });

  it(
    'bills a cut stream for what was delivered',
    geminiHost.cutsItsStream(surface, { usage: null, then: ({ text }) => expect(text).not.toContain('four') }),
  );

  it(
    'does not believe absurd usage',
    geminiHost.reportsAbsurdUsage(surface, '{"promptTokenCount":12,"candidatesTokenCount":1e12,"totalTokenCount":18}'),
  );
});

describe('a Gemini client on a vertex host serving Gemini', () => {
  it.each([false, true])('gets the thoughts and their signature back, in Gemini’s wire (streamed: %s)', async (stream) => {
    g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { thinking: THINKING, text: TEXT } });
    const { res, text } = await send(GENERATE_CONTENT, GEMINI.slug, stream, {
      contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
      generationConfig: { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } },
    });
    expect(res.status).toBe(200);
    const out = GENERATE_CONTENT.read(text, stream);
    expect(out.reasoning).toBe(THINKING);
    expect(out.text).toBe(TEXT);
    expect(out.signatures).toEqual([thoughtSignatureOf(THINKING)]);
  });
});

describe('a vertex host’s Google credential', () => {
  it('is a token the service account got with a signed assertion for the cloud-platform scope, fetched once and reused', async () => {
    g.fake.on(CLAUDE.hostModel, { kind: 'reply', reply: { text: TEXT } });
    for (const surface of SURFACES) await call(surface, CLAUDE.slug, false);
    await Promise.all(SURFACES.map((surface) => call(surface, CLAUDE.slug, true)));
    const claims = tokenRequests('fake-vertex');
    // One token for every call on this host (those of the tests before too), sequential or at once.
    expect(claims).toHaveLength(1);
    expect(claims[0]).toMatchObject({
      iss: vertexAccount('fake-vertex'),
      aud: GOOGLE_TOKEN_AUDIENCE,
      scope: CLOUD_PLATFORM_SCOPE,
    });
    expect((claims[0].exp as number) - (claims[0].iat as number)).toBeLessThanOrEqual(3600);
    const tokens = new Set(g.fake.requests.filter((r) => r.model === CLAUDE.hostModel).map((r) => r.headers.authorization));
    expect(tokens.size).toBe(1);
    // Neither the token nor the key it was got with is ever logged.
    const token = [...tokens][0]!.slice('Bearer '.length);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.filter((line) => line.includes(token) || line.includes('PRIVATE KEY'))).toEqual([]);
    expect(FAKE_TOKEN_LIFETIME_S).toBeGreaterThan(300); // long enough that the library keeps it between calls
  });

  it('none to be had (the token endpoint down): a clear failure before output, worth the next host', async () => {
    const alone = await call(CHAT_COMPLETIONS, TOKENLESS.slug, false);
    expect(alone.res.status).toBe(502);
    expect(JSON.parse(alone.text).error.message).toMatch(/no credential for the host/);
    expect(g.fake.requests.some((r) => r.model === TOKENLESS.hostModel)).toBe(false);

    g.fake.on(TOKENLESS_FIRST.hostModel, { kind: 'reply', reply: { text: TEXT, usage: { input: 1000, output: 1000 } } });
    const { res, text } = await call(MESSAGES, TOKENLESS_FIRST.slug, true);
    expect(res.status).toBe(200);
    expect(MESSAGES.read(text, true).text).toBe(TEXT);
    expect(await settlementOf(res)).toMatchObject({ host: 'fake-vertex', amount: 1_250_000 });
  });

  const headersFrom = (credential: ReturnType<typeof googleCredential>) =>
    credential.headers({ method: 'POST', url: new URL(`${g.fake.url}/v1/x`), headers: {}, body: '{}' });

  /** A key file for a new service account, trusted by the fake unless `untrusted`; its path, account and key. */
  function keyFile(name: string, content?: string) {
    const { key, publicKey } = testServiceAccount(`${g.fake.url}/token`, `${name}@test-project.iam.gserviceaccount.com`);
    const path = join(files.path, `${name}.json`);
    writeFileSync(path, content ?? JSON.stringify(key));
    return { path, key, publicKey };
  }

  it('an assertion not signed by the account’s key gets no token (the endpoint checks the signature)', async () => {
    const signer = keyFile('signer');
    // The fake trusts another key pair for this account than the one the file signs with.
    g.fake.googleOAuth.trust(signer.key.client_email, testServiceAccount('unused').publicKey);
    await expect(headersFrom(googleCredential(signer.path))).rejects.toThrow(/Invalid JWT Signature/);
    g.fake.googleOAuth.trust(signer.key.client_email, signer.publicKey);
    expect(await headersFrom(googleCredential(signer.path))).toEqual({
      authorization: expect.stringMatching(/^Bearer ya29\.fake-/),
    });
  });

  it('calls made at once before there is a token wait for one token request', async () => {
    const file = keyFile('at-once');
    g.fake.googleOAuth.trust(file.key.client_email, file.publicKey);
    const credential = googleCredential(file.path);
    const all = await Promise.all(Array.from({ length: 5 }, () => headersFrom(credential)));
    expect(new Set(all.map((h) => h.authorization)).size).toBe(1);
    expect(g.fake.googleOAuth.requests.filter((claims) => claims.iss === file.key.client_email)).toHaveLength(1);
  });

  it('a token endpoint that answers an error: the failure says what it answered', async () => {
    const file = keyFile('refused');
    g.fake.googleOAuth.trust(file.key.client_email, file.publicKey);
    g.fake.googleOAuth.failure = {
      status: 503,
      body: { error: 'temporarily_unavailable', error_description: 'Try again later.' },
    };
    try {
      await expect(headersFrom(googleCredential(file.path))).rejects.toThrow(/temporarily_unavailable: Try again later/);
    } finally {
      g.fake.googleOAuth.failure = null;
    }
  });

  it('reads the key file GOOGLE_APPLICATION_CREDENTIALS names when the host names none', async () => {
    const file = keyFile('from-env');
    g.fake.googleOAuth.trust(file.key.client_email, file.publicKey);
    const credential = googleCredential('', { GOOGLE_APPLICATION_CREDENTIALS: file.path });
    expect(await headersFrom(credential)).toEqual({ authorization: expect.stringMatching(/^Bearer ya29\.fake-/) });
    expect(g.fake.googleOAuth.requests.at(-1)).toMatchObject({ iss: file.key.client_email });
  });

  it('a key file that cannot be read or is not JSON: a failure naming the file, never its text', async () => {
    await expect(headersFrom(googleCredential(join(files.path, 'missing.json')))).rejects.toThrow(
      /the credentials file named by the host \(.*missing\.json\) cannot be read: ENOENT/,
    );
    const secret = '-----BEGIN PRIVATE KEY-----MIIEvQIBADANBg';
    const broken = keyFile('broken', `{"private_key": "${secret}`);
    const failure = headersFrom(googleCredential(broken.path));
    await expect(failure).rejects.toThrow(/is not a JSON object/);
    await expect(failure).rejects.not.toThrow(/PRIVATE KEY|MIIE/);
  });

  it('the fake’s Vertex AI refuses a call without a token it issued, in Google’s format', async () => {
    const res = await fetch(
      `${g.fake.url}/v1/projects/p/locations/l/publishers/anthropic/models/${CLAUDE.hostModel}:rawPredict`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer ya29.forged' },
        body: JSON.stringify({ anthropic_version: 'vertex-2023-10-16', max_tokens: 5, messages: [] }),
      },
    );
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: 401, status: 'UNAUTHENTICATED' } });
  });
});

describe('count_tokens on a vertex host serving Claude', () => {
  it('is counted by the count-tokens model, with the host model in the body', async () => {
    g.fake.on(CLAUDE.hostModel, { kind: 'count', inputTokens: 4242 });
    const body = { model: CLAUDE.slug, messages: [{ role: 'user', content: 'How many tokens?' }] };
    const res = await post('messages/count_tokens', body);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ input_tokens: 4242 });
    const counted = g.fake.requests.at(-1)!;
    expect(counted.path).toBe('/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict');
    expect(counted.body).toEqual({ ...body, model: CLAUDE.hostModel, anthropic_version: 'vertex-2023-10-16' });
    expect(counted.headers.authorization).toMatch(/^Bearer ya29\.fake-/);
  });
});

/** Each publisher on the fake: a model of its, every usage field it reports, and how it says it failed mid-stream. */
const PUBLISHERS = [
  {
    publisher: 'anthropic',
    model: 'claude-direct@1',
    usage: { input: 7, cacheRead: 11, cacheWrite: 13, cacheWrite1h: 17, output: 19 },
    billed: {
      inputTokens: 7,
      cacheReadTokens: 11,
      cacheWriteTokens: 13,
      cacheWrite1hTokens: 17,
      outputTokens: 19,
      reasoningTokens: 0,
    },
    signature: signatureOf(THINKING),
    streamError: /^Overloaded$/,
    verbatim: {
      id: 'msg_vrtx_01AbCdEf',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [{ type: 'text', text: TEXT }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: 9,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        output_tokens: 6,
      },
    },
  },
  {
    publisher: 'google',
    model: 'gemini-direct',
    usage: { input: 7, cacheRead: 11, output: 19, reasoning: 5, toolPrompt: 3 },
    // The tool-use prompt is input; the thoughts are within the output.
    billed: {
      inputTokens: 10,
      cacheReadTokens: 11,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      outputTokens: 19,
      reasoningTokens: 5,
    },
    signature: thoughtSignatureOf(THINKING),
    streamError: /^INTERNAL: An internal error has occurred/,
    verbatim: {
      candidates: [{ content: { role: 'model', parts: [{ text: TEXT }] }, finishReason: 'STOP', avgLogprobs: -0.21 }],
      usageMetadata: {
        promptTokenCount: 9,
        candidatesTokenCount: 6,
        totalTokenCount: 15,
        trafficType: 'ON_DEMAND',
        promptTokensDetails: [{ modality: 'TEXT', tokenCount: 9 }],
        candidatesTokensDetails: [{ modality: 'TEXT', tokenCount: 6 }],
      },
      modelVersion: 'gemini-2.5-pro',
      createTime: '2026-11-26T11:00:00.000000Z',
      responseId: 'vrtx-resp-01',
    },
  },
] as const;

describe.each(PUBLISHERS)(
  'the vertex kind called by the transport, on every behaviour of the fake’s $publisher publisher',
  (p) => {
    let transport: HostTransport;
    let endpoint: HostEndpoint;
    beforeAll(() => {
      // Short limits, so a host that hangs is given up quickly.
      transport = new HostTransport({ firstByteMs: 300, replyMs: 300, idleMs: 300 });
      const host = vertexHost(g.fake, `fake-vertex-direct-${p.publisher}`, files.path);
      endpoint = { id: host.id, baseUrl: host.baseUrl, apiKey: null, settings: { ...host } };
    });
    afterAll(() => transport.onApplicationShutdown());

    const request = (stream: boolean): CanonicalRequest => ({
      system: [],
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      stop: [],
      stream,
      maxTokens: 100,
    });

    /** The events of one call, and the error it ended with (null: it completed). */
    async function run(hostModel: string, stream: boolean) {
      const events: CanonicalEvent[] = [];
      try {
        await lastValueFrom(transport.call(vertexKind, endpoint, hostModel, request(stream)).pipe(tap((e) => events.push(e))));
        return { events, error: null };
      } catch (error) {
        return { events, error: error as HostError };
      }
    }
    const textOf = (events: CanonicalEvent[]) =>
      events
        .filter((e) => e.type === 'text')
        .map((e) => (e as { text: string }).text)
        .join('');

    it.each([false, true])('a reply with every usage field (streamed: %s)', async (stream) => {
      g.fake.on(p.model, { kind: 'reply', reply: { thinking: THINKING, text: TEXT, usage: p.usage } });
      const { events, error } = await run(p.model, stream);
      expect(error).toBeNull();
      expect(textOf(events)).toBe(TEXT);
      expect(events.filter((e) => e.type === 'reasoning' && e.signature)).toEqual([
        expect.objectContaining({ signature: p.signature }),
      ]);
      expect(events.filter((e) => e.type === 'usage').at(-1)).toEqual({ type: 'usage', usage: p.billed });
    });

    it.each([false, true])('an error status in Google’s format, worth the next host (streamed: %s)', async (stream) => {
      g.fake.on(p.model, { kind: 'status', status: 429 });
      const { error } = await run(p.model, stream);
      expect(error).toMatchObject({ kind: 'status', status: 429, retryable: true });
      expect(error!.message).toMatch(/^RESOURCE_EXHAUSTED: Quota exceeded for aiplatform\.googleapis\.com/);
    });

    it.each([
      ['hang', false],
      ['hang', true],
      ['hang_after_headers', true],
    ] as const)('a host that does not answer (%s, streamed: %s): a timeout before output', async (kind, stream) => {
      g.fake.on(p.model, { kind });
      const { error } = await run(p.model, stream);
      expect(error).toMatchObject({ kind: 'timeout', beforeOutput: true });
    });

    it('a stream cut after output: what came, then a connection error after output', async () => {
      g.fake.on(p.model, { kind: 'cut', reply: { text: 'one two three four' }, afterPieces: 2 });
      const { events, error } = await run(p.model, true);
      expect(textOf(events)).toBe('one two');
      expect(error).toMatchObject({ kind: 'connection', beforeOutput: false });
    });

    it.each([false, true])('an unreadable reply: malformed (streamed: %s)', async (stream) => {
      g.fake.on(p.model, { kind: 'malformed', afterPieces: 1 });
      const { events, error } = await run(p.model, stream);
      expect(error).toMatchObject({ kind: 'malformed', beforeOutput: !stream });
      if (stream) expect(textOf(events)).not.toBe('');
    });

    it('an error inside the stream after output: the publisher’s reason', async () => {
      g.fake.on(p.model, { kind: 'stream_error', afterPieces: 1 });
      const { error } = await run(p.model, true);
      expect(error).toMatchObject({ kind: 'upstream_error', beforeOutput: false });
      expect(error!.message).toMatch(p.streamError);
    });

    it('a reply exactly as Vertex AI sends it (verbatim)', async () => {
      g.fake.on(p.model, { kind: 'verbatim', body: JSON.stringify(p.verbatim) });
      const { events, error } = await run(p.model, false);
      expect(error).toBeNull();
      expect(textOf(events)).toBe(TEXT);
      expect(events).toContainEqual({ type: 'finish', reason: 'stop' });
    });

    it('a count asked on a model that is not the count-tokens one: refused (400), not retried elsewhere', async () => {
      g.fake.on(p.model, { kind: 'count', inputTokens: 1 });
      const { error } = await run(p.model, false);
      expect(error).toMatchObject({ kind: 'status', status: 400, retryable: false });
    });
  },
);
