import { chargeOf } from '../support/charges';
import { fakeEmbedding, type FakeUsage } from '../support/fake-upstream';
import { AZURE_RETRY_AFTER_SECONDS, azureFilteredCompletion, azurePromptFiltered } from '../support/fakes/azure';
import { auditThenClose, startGateway, TestGateway } from '../support/gateway';
import { calledOnce, modelEntry, withOwn } from '../support/spec-catalogue';
import { CHAT_COMPLETIONS, Got, sseData, Surface, SURFACES, WEATHER } from '../support/surfaces';
import { throughGateway } from '../support/through-gateway';
import { hostUnderTest, TEXT, THINKING } from './support/host-under-test';

/**
 * Models on `azure` hosts, through every client surface, whole and streamed, against the fake's
 * Azure OpenAI: a deployment on the dated route (chat completions, `api-version`, `api-key`) and a
 * deployment on the v1 route's Responses API. What the host replies reaches the client; every token
 * class is billed exactly at the catalogue's prices; a cut stream is billed for what was delivered;
 * a failure before output falls back; the content filter's refusals and cuts are told as such;
 * absurd usage is not believed; embeddings are served on a deployment; the ledger audits clean.
 */

/** A deployment of gpt-4.1 on the dated route. Its cached input at five decimals, so that the rounding up shows. */
const CHAT = {
  slug: 'azure/gpt-4.1',
  id: 'a2a2a2a2-0001-4a2a-8a2a-a2a2a2a2a2a2',
  deployment: 'gpt-41-prod',
  prices: { input: '2.00', cacheRead: '0.50001', output: '8.00' },
};
/** A deployment of o4-mini served by the v1 route's Responses API (its reasoning summarized). */
const RESPONSES = {
  slug: 'azure/o4-mini',
  id: 'a2a2a2a2-0002-4a2a-8a2a-a2a2a2a2a2a2',
  deployment: 'o4-mini-prod',
  prices: { input: '1.10', cacheRead: '0.27501', output: '4.40' },
};
/** Two azure hosts: the first (`azure-first`, dear) fails before output, the second serves `CHAT`'s deployment at its prices. */
const FALLBACK = {
  slug: 'azure/gpt-4.1-fallback',
  id: 'a2a2a2a2-0003-4a2a-8a2a-a2a2a2a2a2a2',
  deployment: 'gpt-41-second',
};
const EMBED = { slug: 'azure/text-embedding-3-small', id: 'a2a2a2a2-0004-4a2a-8a2a-a2a2a2a2a2a2', deployment: 'embed-small' };

const catalogue = withOwn((fake) => {
  // The fake's Azure paths are at its root, as on a resource's endpoint.
  const azure = (id: string, fields: Record<string, string> = {}) =>
    calledOnce({ id, kind: 'azure', endpoint: fake.url, apiKeyEnv: 'FAKE_OPENAI_KEY', ...fields });
  return {
    hosts: [
      azure('fake-azure', { apiVersion: '2024-10-21' }),
      azure('fake-azure-first'),
      azure('fake-azure-v1', { route: 'v1', api: 'responses' }),
    ],
    models: [
      modelEntry(CHAT, [{ host: 'fake-azure', model: CHAT.deployment, pricing: CHAT.prices }]),
      modelEntry(RESPONSES, [{ host: 'fake-azure-v1', model: RESPONSES.deployment, pricing: RESPONSES.prices }]),
      modelEntry(FALLBACK, [
        { host: 'fake-azure-first', model: 'gpt-41-first', pricing: { input: '9.00', output: '9.00' } },
        { host: 'fake-azure', model: FALLBACK.deployment, pricing: CHAT.prices },
      ]),
      {
        slug: EMBED.slug,
        kind: 'embedding',
        id: EMBED.id,
        name: EMBED.slug,
        contextLength: 8191,
        hosts: [{ host: 'fake-azure', model: EMBED.deployment, pricing: { input: '0.02' } }],
      },
    ],
  };
});

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ catalogue });
});
afterAll(() => auditThenClose(g));

const through = throughGateway(() => g);
const { call, post, sent, endingOf, settlementOf } = through;

/** What the client read; a Responses stream's deltas (what it reads) add up to what its final response says. */
function read(surface: Surface<string>, text: string, stream: boolean): Got {
  const out = surface.read(text, stream);
  if (surface.name === 'responses' && stream) {
    const final = JSON.stringify(sseData(text).at(-1).response);
    expect(surface.read(final, false).text).toBe(out.text);
  }
  return out;
}

/** The deployments on the dated route's chat completions and on the v1 route's Responses API. */
const chatHost = hostUnderTest(through, {
  model: { slug: CHAT.slug, hostModel: CHAT.deployment },
  fallback: { slug: FALLBACK.slug, firstHostModel: 'gpt-41-first', hostModel: FALLBACK.deployment },
  read,
});
const responsesHost = hostUnderTest(through, { model: { slug: RESPONSES.slug, hostModel: RESPONSES.deployment }, read });

/** The reasoning tokens a reply's usage shows, read where these tests read them: a whole chat completion's and a Responses reply's usage; undefined elsewhere. */
function reasoningShown(surface: Surface, text: string, stream: boolean): number | undefined {
  if (surface.name === 'chat-completions' && !stream) return JSON.parse(text).usage.completion_tokens_details.reasoning_tokens;
  if (surface.name !== 'responses') return undefined;
  const response = stream ? sseData(text).at(-1).response : JSON.parse(text);
  return response.usage.output_tokens_details.reasoning_tokens;
}

const CALL = { id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
/** Every class Azure reports, each count odd enough that the sum is no whole nano-credit until rounded up. */
const USAGE: FakeUsage = { input: 1_237, cacheRead: 20_011, output: 523, reasoning: 211 };

describe.each(SURFACES)('the $name surface on azure hosts', (surface) => {
  describe.each([false, true])('streamed: %s', (stream) => {
    it('reaches a deployment on the dated route with its api-key, and gets the text back', async () => {
      const { out, upstream } = await chatHost.answers(surface, stream, { text: TEXT });
      expect(out).toMatchObject({ text: TEXT, finish: expect.any(String) });
      // The fake refuses a dated route without a supported api-version: the call had one.
      expect(upstream.path).toBe(`/openai/deployments/${CHAT.deployment}/chat/completions`);
      expect(upstream.headers['api-key']).toBe('upstream-openai-key');
      expect(upstream.headers.authorization).toBeUndefined();
      expect(upstream.body).toMatchObject({ model: CHAT.deployment, stream });
      // A chat-completions client's body is passed whole (it asked for no cap); the others get the model's.
      if (surface.name !== 'chat-completions') expect(upstream.body.max_tokens).toBe(1000);
    });

    it('reaches a deployment on the v1 route’s Responses API, and gets the text back', async () => {
      const { out, upstream } = await responsesHost.answers(surface, stream, { text: TEXT });
      expect(out.text).toBe(TEXT);
      expect(upstream.path).toBe('/openai/v1/responses');
      expect(upstream.headers['api-key']).toBe('upstream-openai-key');
      expect(upstream.body).toMatchObject({ model: RESPONSES.deployment, stream, max_output_tokens: 1000 });
    });

    if (surface.tools) {
      it('carries a tool call with its arguments streamed, on chat completions', async () => {
        const { out, upstream } = await chatHost.answers(surface, stream, { toolCalls: [CALL] }, { tools: true });
        expect(out.calls).toEqual([CALL]);
        expect(upstream.body.tools).toEqual([{ type: 'function', function: WEATHER }]);
      });

      it('carries the reasoning summary and a tool call, on the Responses API', async () => {
        const { out } = await responsesHost.answers(surface, stream, { thinking: THINKING, toolCalls: [CALL] }, { tools: true });
        expect(out.calls).toEqual([CALL]);
        expect(out.reasoning).toBe(THINKING);
      });
    }

    it.each([
      ['chat completions', CHAT, chatHost],
      ['the Responses API', RESPONSES, responsesHost],
    ])('bills every token class exactly, on %s', async (_api, m, host) => {
      const { res, text } = await host.answers(surface, stream, { text: TEXT, usage: USAGE });
      // The reasoning tokens Azure reported, shown where the surface's usage has a field for them.
      const shown = reasoningShown(surface, text, stream);
      if (shown !== undefined) expect(shown).toBe(USAGE.reasoning);
      const settled = await settlementOf(res);
      expect(settled).toMatchObject({
        hostModel: m.deployment,
        inputTokens: USAGE.input,
        cacheReadTokens: USAGE.cacheRead,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        // Reasoning is within the output, billed at its price.
        outputTokens: USAGE.output,
        amount: chargeOf(m.prices, USAGE),
      });
    });

    it(
      'falls back to the next host on a 429 (with retry-after), a 500, a 503 or a 401 before output',
      chatHost.failsBeforeOutput(surface, stream, [429, 500, 503, 401], {
        host: 'fake-azure',
        amount: chargeOf(CHAT.prices, { input: 1000, output: 1000 }),
      }),
    );

    it('tells a prompt Azure’s content filter refused as the caller’s error, naming the category, billing nothing', async () => {
      g.fake.on(CHAT.deployment, { kind: 'status', status: 400, body: azurePromptFiltered('violence', 'medium') });
      const { res, text } = await call(surface, CHAT.slug, stream);
      expect(res.status).toBe(400);
      expect(text).toMatch(/content management policy/);
      expect(text).toMatch(/content filter: violence \(medium\)/);
      expect((await endingOf(res)).type).toBe('ReservationReleased');
    });

    it('ends a completion the content filter stopped with what was delivered, finished as filtered, billed from the usage', async () => {
      const usage = { input: 40, output: 7 };
      g.fake.on(CHAT.deployment, {
        kind: 'verbatim',
        body: azureFilteredCompletion(CHAT.deployment, stream ? ['Here', ' is'] : [], usage, stream),
      });
      const { res, text } = await call(surface, CHAT.slug, stream);
      expect(res.status).toBe(200);
      const out = read(surface, text, stream);
      expect(out.text).toBe(stream ? 'Here is' : '');
      const told: Record<string, string> = {
        'chat-completions': 'content_filter',
        messages: 'refusal',
        responses: 'content_filter',
        native: 'content_filter',
      };
      expect(out.finish).toBe(told[surface.name]);
      expect(await settlementOf(res)).toMatchObject({ inputTokens: 40, outputTokens: 7, amount: chargeOf(CHAT.prices, usage) });
    });
  });

  it(
    'bills a cut stream for what was delivered',
    chatHost.cutsItsStream(surface, { then: ({ out }) => expect(out.text).toBe('one two three') }),
  );

  it(
    'does not believe absurd usage',
    chatHost.reportsAbsurdUsage(surface, '{"prompt_tokens":12,"completion_tokens":1e12,"total_tokens":1e12}'),
  );
});

describe("a messages client's max_tokens 1 (Claude Code's quota probe) on the Responses API, which takes no cap below 16", () => {
  it('is served: the deployment is sent 16, and its count is billed as it reported it', async () => {
    g.fake.on(RESPONSES.deployment, { kind: 'reply', reply: { text: 'Hi', finish: 'length', usage: { input: 8, output: 16 } } });
    const res = await post('messages', { model: RESPONSES.slug, max_tokens: 1, messages: [{ role: 'user', content: 'quota' }] });
    expect(res.status).toBe(200);
    expect(sent(RESPONSES.deployment)).toMatchObject({ path: '/openai/v1/responses', body: { max_output_tokens: 16 } });
    const settled = await settlementOf(res);
    expect(settled).toMatchObject({
      inputTokens: 8,
      outputTokens: 16,
      amount: chargeOf(RESPONSES.prices, { input: 8, output: 16 }),
    });
    expect(settled).not.toHaveProperty('usageFlag');
  });
});

describe('a chat-completions client on an azure deployment, passed whole', () => {
  it.each([false, true])(
    'gets Azure’s reply under the slug, its filter results kept, with the cost (streamed: %s)',
    async (stream) => {
      g.fake.on(CHAT.deployment, { kind: 'reply', reply: { text: TEXT, usage: USAGE } });
      const body = {
        model: CHAT.slug,
        stream,
        messages: [{ role: 'user', content: 'Hello' }],
        seed: 7,
        ...(stream ? { stream_options: { include_usage: true } } : {}),
      };
      const res = await post('chat/completions', body);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(sent(CHAT.deployment).body).toMatchObject({ ...body, model: CHAT.deployment });
      const cost = chargeOf(CHAT.prices, USAGE) / 1e9;
      if (stream) {
        const chunks = sseData(text);
        // The prompt's filter results come first, in a chunk without choices, as Azure sent it.
        expect(chunks[0]).toMatchObject({ choices: [], prompt_filter_results: [{ prompt_index: 0 }] });
        expect(chunks.some((c) => c.choices?.[0]?.content_filter_results?.violence)).toBe(true);
        expect(chunks.at(-1).usage).toMatchObject({
          prompt_tokens: 21_248,
          prompt_tokens_details: { cached_tokens: 20_011 },
          cost,
        });
      } else {
        const reply = JSON.parse(text);
        expect(reply.model).toBe(CHAT.slug);
        expect(reply.prompt_filter_results).toHaveLength(1);
        expect(reply.choices[0].content_filter_results.violence).toEqual({ filtered: false, severity: 'safe' });
        expect(reply.usage).toMatchObject({ completion_tokens_details: { reasoning_tokens: 211 }, cost });
      }
      const settled = await settlementOf(res);
      expect(settled.amount).toBe(chargeOf(CHAT.prices, USAGE));
      // Recorded from Azure's first chunk that names the reply (its prompt's filter chunk has an empty id).
      expect(settled.upstreamId).toMatch(/^chatcmpl-/);
    },
  );
});

describe('embeddings on an azure deployment', () => {
  it('are asked of the deployment with the api-key, and billed by input at its price', async () => {
    g.fake.on(EMBED.deployment, { kind: 'reply', reply: { usage: { input: 1234, output: 0 } } });
    const ask = { model: EMBED.slug, input: ['The quick brown fox. '.repeat(100), 'jumps'], dimensions: 4 };
    const res = await post('embeddings', ask);
    expect(res.status).toBe(200);
    const reply = (await res.json()) as { data: Array<{ embedding: number[] }> };
    expect(reply.data[1].embedding).toEqual(fakeEmbedding('jumps', 4));
    const upstream = sent(EMBED.deployment);
    expect(upstream.path).toBe(`/openai/deployments/${EMBED.deployment}/embeddings`);
    expect(upstream.headers['api-key']).toBe('upstream-openai-key');
    expect(upstream.body).toEqual({ ...ask, model: EMBED.deployment });
    // 1,234 tokens × $0.02 per million = 24,680 nano-credits.
    expect(await settlementOf(res)).toMatchObject({ host: 'fake-azure', inputTokens: 1234, amount: 24_680 });
  });
});

describe('a 429 from the only host of a model', () => {
  it('tells the caller Azure’s message, when to retry included, and bills nothing', async () => {
    g.fake.on(CHAT.deployment, { kind: 'status', status: 429 });
    const { res, text } = await call(CHAT_COMPLETIONS, CHAT.slug, false);
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(text).toContain(`Please retry after ${AZURE_RETRY_AFTER_SECONDS} seconds`);
    expect((await endingOf(res)).type).toBe('ReservationReleased');
  });
});
