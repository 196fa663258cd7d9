import type { ReservationReleased, ReservationSettled } from '../../src/ledger/ledger.events';
import type { FakeUpstream, FakeUsage } from '../support/fake-upstream';
import { fakeEmbedding } from '../support/fake-upstream';
import { AZURE_RETRY_AFTER_SECONDS, azureFilteredCompletion, azurePromptFiltered } from '../support/fakes/azure';
import { auditThenClose, startGateway, testCatalogueFile, TestGateway } from '../support/gateway';

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

const model = (slug: string, id: string, hosts: unknown[]) => ({
  slug,
  id,
  name: slug,
  contextLength: 128_000,
  maxOutputTokens: 1000,
  reasoning: true,
  hosts,
});

function catalogue(fake: FakeUpstream) {
  const file = testCatalogueFile(fake);
  // The fake's Azure paths are at its root, as on a resource's endpoint.
  // Each host is called once per request, as the shared catalogue's are: what a failure leads to here
  // is the next host; retrying the same one is routing/retries.spec's.
  const azure = (id: string, fields: Record<string, string> = {}) => ({
    id,
    kind: 'azure',
    endpoint: fake.url,
    apiKeyEnv: 'FAKE_OPENAI_KEY',
    retry: { attempts: 0 },
    ...fields,
  });
  return {
    hosts: [
      ...file.hosts,
      azure('fake-azure', { apiVersion: '2024-10-21' }),
      azure('fake-azure-first'),
      azure('fake-azure-v1', { route: 'v1', api: 'responses' }),
    ],
    models: [
      ...file.models,
      model(CHAT.slug, CHAT.id, [{ host: 'fake-azure', model: CHAT.deployment, pricing: CHAT.prices }]),
      model(RESPONSES.slug, RESPONSES.id, [{ host: 'fake-azure-v1', model: RESPONSES.deployment, pricing: RESPONSES.prices }]),
      model(FALLBACK.slug, FALLBACK.id, [
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
}

const WEATHER = {
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** What a client got, whatever its surface. */
interface Got {
  text: string;
  reasoning: string;
  calls: Array<{ id: string; name: string; arguments: string }>;
  /** How it finished, in the surface's words. */
  finish: string | null;
}

function sseEvents(text: string): Array<{ event?: string; data: any }> {
  return text
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)![1];
      return { event, data: data === '[DONE]' ? data : JSON.parse(data) };
    });
}

interface Surface {
  name: string;
  tools: boolean;
  path(slug: string): string;
  headers(key: string): Record<string, string>;
  body(slug: string, stream: boolean, withTools: boolean): Record<string, unknown>;
  read(body: string, stream: boolean): Got;
}

const got = (): Got => ({ text: '', reasoning: '', calls: [], finish: null });

const SURFACES: Surface[] = [
  {
    name: 'chat-completions',
    tools: true,
    path: () => 'chat/completions',
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (slug, stream, withTools) => ({
      model: slug,
      stream,
      reasoning_effort: 'low',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
      ],
      ...(withTools ? { tools: [{ type: 'function', function: WEATHER }] } : {}),
    }),
    read(body, stream) {
      const out = got();
      const choices = stream
        ? sseEvents(body)
            .filter((e) => e.data !== '[DONE]')
            .flatMap((e) => e.data.choices ?? [])
            .map((c: any) => ({ part: c.delta ?? {}, finish: c.finish_reason }))
        : JSON.parse(body).choices.map((c: any) => ({ part: c.message, finish: c.finish_reason }));
      for (const { part, finish } of choices) {
        out.text += part.content ?? '';
        out.reasoning += part.reasoning_content ?? '';
        out.finish = finish ?? out.finish;
        for (const [i, call] of (part.tool_calls ?? []).entries()) {
          const index = call.index ?? i;
          out.calls[index] ??= { id: call.id, name: call.function.name, arguments: '' };
          out.calls[index].arguments += call.function.arguments ?? '';
        }
      }
      return out;
    },
  },
  {
    name: 'messages',
    tools: true,
    path: () => 'messages',
    headers: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
    body: (slug, stream, withTools) => ({
      model: slug,
      stream,
      max_tokens: 1000,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hello' }],
      ...(withTools
        ? { tools: [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters }] }
        : {}),
    }),
    read(body, stream) {
      const out = got();
      if (!stream) {
        const message = JSON.parse(body);
        out.finish = message.stop_reason;
        for (const block of message.content) {
          if (block.type === 'text') out.text += block.text;
          if (block.type === 'thinking') out.reasoning += block.thinking;
          if (block.type === 'tool_use')
            out.calls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
        }
        return out;
      }
      const calls = new Map<number, Got['calls'][number]>();
      for (const { data } of sseEvents(body)) {
        if (data.type === 'message_delta') out.finish = data.delta.stop_reason;
        if (data.type === 'content_block_start' && data.content_block.type === 'tool_use') {
          calls.set(data.index, { id: data.content_block.id, name: data.content_block.name, arguments: '' });
          out.calls.push(calls.get(data.index)!);
        }
        if (data.type !== 'content_block_delta') continue;
        out.text += data.delta.text ?? '';
        out.reasoning += data.delta.thinking ?? '';
        if (data.delta.type === 'input_json_delta') calls.get(data.index)!.arguments += data.delta.partial_json;
      }
      return out;
    },
  },
  {
    name: 'responses',
    tools: true,
    path: () => 'responses',
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (slug, stream, withTools) => ({
      model: slug,
      stream,
      instructions: 'Be brief.',
      input: 'Hello',
      reasoning: { effort: 'low' },
      ...(withTools ? { tools: [{ type: 'function', ...WEATHER, strict: false }] } : {}),
    }),
    read(body, stream) {
      const out = got();
      const events = stream ? sseEvents(body) : [];
      const response = stream ? events.at(-1)!.data.response : JSON.parse(body);
      out.finish = response.incomplete_details?.reason ?? response.status;
      for (const item of response.output) {
        if (item.type === 'message') out.text += item.content.map((c: any) => c.text ?? c.refusal ?? '').join('');
        if (item.type === 'reasoning')
          out.reasoning += [...item.summary, ...(item.content ?? [])].map((c: any) => c.text).join('');
        if (item.type === 'function_call') out.calls.push({ id: item.call_id, name: item.name, arguments: item.arguments });
      }
      if (stream) {
        // The deltas add up to what the final response says.
        const deltas = events.filter((e) => e.data.type === 'response.output_text.delta').map((e) => e.data.delta);
        expect(deltas.join('')).toBe(out.text);
      }
      return out;
    },
  },
  {
    name: 'native',
    tools: false,
    path: (slug) => `models/${slug}/chat`,
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (_slug, stream) => ({ stream, messages: [{ role: 'user', content: 'Hello' }] }),
    read(body, stream) {
      const out = got();
      if (!stream) {
        const reply = JSON.parse(body);
        out.text = reply.text;
        out.finish = reply.finish_reason;
        return out;
      }
      for (const e of sseEvents(body)) {
        if (e.event === 'delta') out.text += e.data.text;
        if (e.event === 'done') out.finish = e.data.finish_reason;
      }
      return out;
    },
  },
];

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ catalogue });
});
afterAll(async () => {
  await auditThenClose(g);
});

async function call(surface: Surface, slug: string, stream: boolean, withTools = false) {
  const res = await fetch(`${g.baseUrl}/api/v1/${surface.path(slug)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...surface.headers(g.key) },
    body: JSON.stringify(surface.body(slug, stream, withTools)),
  });
  return { res, text: await res.text() };
}

/** The ledger's ending of the request the response names: its settlement or its release. */
async function endingOf(res: Response) {
  const requestId = res.headers.get('x-request-id')!;
  await g.logged(requestId);
  await g.settled();
  const log = await g.t.runtime.events.readAll(0, 100_000);
  const ending = log.find(
    (e) =>
      (e.type === 'ReservationSettled' || e.type === 'ReservationReleased') &&
      (e.data as { requestId: string }).requestId === requestId,
  )!;
  return ending as
    | { type: 'ReservationSettled'; data: ReservationSettled['data'] }
    | { type: 'ReservationReleased'; data: ReservationReleased['data'] };
}

async function settlementOf(res: Response): Promise<ReservationSettled['data']> {
  const ending = await endingOf(res);
  expect(ending.type).toBe('ReservationSettled');
  return ending.data as ReservationSettled['data'];
}

/** The last request the fake received for a deployment. */
const sent = (deployment: string) => g.fake.requests.filter((r) => r.body?.model === deployment).at(-1)!;

/** A list price (US dollars per million tokens) in nano-credits per million tokens, exactly. */
const nanoPerMillion = (price: string): bigint => {
  const [whole, fraction = ''] = price.split('.');
  return BigInt(whole) * 1_000_000_000n + BigInt(fraction.padEnd(9, '0'));
};

/** ceil(Σ tokens × price / 1e6), in nano-credits: what a request reporting these tokens must be charged. */
function chargeOf(prices: { input: string; cacheRead: string; output: string }, u: FakeUsage): number {
  const sum =
    BigInt(u.input) * nanoPerMillion(prices.input) +
    BigInt(u.cacheRead ?? 0) * nanoPerMillion(prices.cacheRead) +
    BigInt(u.output) * nanoPerMillion(prices.output);
  return Number((sum + 999_999n) / 1_000_000n);
}

/** The reasoning tokens a reply's usage shows: the chat-completions and Responses surfaces' fields (a stream's usage comes only when asked for); undefined elsewhere. */
function reasoningShown(surface: Surface, text: string, stream: boolean): number | undefined {
  if (surface.name === 'chat-completions' && !stream) return JSON.parse(text).usage.completion_tokens_details.reasoning_tokens;
  if (surface.name !== 'responses') return undefined;
  const response = stream ? sseEvents(text).at(-1)!.data.response : JSON.parse(text);
  return response.usage.output_tokens_details.reasoning_tokens;
}

const TEXT = 'Sunny in Paris today.';
const THINKING = 'The user wants the weather.';
const CALL = { id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
/** Every class Azure reports, each count odd enough that the sum is no whole nano-credit until rounded up. */
const USAGE: FakeUsage = { input: 1_237, cacheRead: 20_011, output: 523, reasoning: 211 };

describe.each(SURFACES)('the $name surface on azure hosts', (surface) => {
  describe.each([false, true])('streamed: %s', (stream) => {
    it('reaches a deployment on the dated route with its api-key, and gets the text back', async () => {
      g.fake.on(CHAT.deployment, { kind: 'reply', reply: { text: TEXT } });
      const { res, text } = await call(surface, CHAT.slug, stream);
      expect(res.status).toBe(200);
      expect(surface.read(text, stream)).toMatchObject({ text: TEXT, finish: expect.any(String) });
      const upstream = sent(CHAT.deployment);
      // The fake refuses a dated route without a supported api-version: the call had one.
      expect(upstream.path).toBe(`/openai/deployments/${CHAT.deployment}/chat/completions`);
      expect(upstream.headers['api-key']).toBe('upstream-openai-key');
      expect(upstream.headers.authorization).toBeUndefined();
      expect(upstream.body).toMatchObject({ model: CHAT.deployment, stream });
      // A chat-completions client's body is passed whole (it asked for no cap); the others get the model's.
      if (surface.name !== 'chat-completions') expect(upstream.body.max_tokens).toBe(1000);
    });

    it('reaches a deployment on the v1 route’s Responses API, and gets the text back', async () => {
      g.fake.on(RESPONSES.deployment, { kind: 'reply', reply: { text: TEXT } });
      const { res, text } = await call(surface, RESPONSES.slug, stream);
      expect(res.status).toBe(200);
      expect(surface.read(text, stream).text).toBe(TEXT);
      const upstream = sent(RESPONSES.deployment);
      expect(upstream.path).toBe('/openai/v1/responses');
      expect(upstream.headers['api-key']).toBe('upstream-openai-key');
      expect(upstream.body).toMatchObject({ model: RESPONSES.deployment, stream, max_output_tokens: 1000 });
    });

    if (surface.tools) {
      it('carries a tool call with its arguments streamed, on chat completions', async () => {
        g.fake.on(CHAT.deployment, { kind: 'reply', reply: { toolCalls: [CALL] } });
        const { res, text } = await call(surface, CHAT.slug, stream, true);
        expect(res.status).toBe(200);
        expect(surface.read(text, stream).calls).toEqual([CALL]);
        expect(sent(CHAT.deployment).body.tools).toEqual([{ type: 'function', function: WEATHER }]);
      });

      it('carries the reasoning summary and a tool call, on the Responses API', async () => {
        g.fake.on(RESPONSES.deployment, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
        const { res, text } = await call(surface, RESPONSES.slug, stream, true);
        expect(res.status).toBe(200);
        const out = surface.read(text, stream);
        expect(out.calls).toEqual([CALL]);
        expect(out.reasoning).toBe(THINKING);
      });
    }

    it.each([
      ['chat completions', CHAT],
      ['the Responses API', RESPONSES],
    ])('bills every token class exactly, on %s', async (_api, m) => {
      g.fake.on(m.deployment, { kind: 'reply', reply: { text: TEXT, usage: USAGE } });
      const { res, text } = await call(surface, m.slug, stream);
      expect(res.status).toBe(200);
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

    it('falls back to the next host on a 429 (with retry-after), a 500, a 503 or a 401 before output', async () => {
      for (const status of [429, 500, 503, 401]) {
        g.fake.on('gpt-41-first', { kind: 'status', status });
        g.fake.on(FALLBACK.deployment, { kind: 'reply', reply: { text: TEXT, usage: { input: 1000, output: 1000 } } });
        const { res, text } = await call(surface, FALLBACK.slug, stream);
        expect(res.status).toBe(200);
        expect(surface.read(text, stream).text).toBe(TEXT);
        expect(await settlementOf(res)).toMatchObject({
          host: 'fake-azure',
          amount: chargeOf(CHAT.prices, { input: 1000, output: 1000 }),
        });
      }
    });

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
      const out = surface.read(text, stream);
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

  it('bills a cut stream for what was delivered', async () => {
    g.fake.on(CHAT.deployment, { kind: 'cut', reply: { text: 'one two three four five six' }, afterPieces: 3 });
    const { res, text } = await call(surface, CHAT.slug, true);
    expect(res.status).toBe(200);
    expect(surface.read(text, true).text).toBe('one two three');
    const settled = await settlementOf(res);
    // Nothing reported by the host: the gateway's count of the three words delivered (4 characters a token).
    expect(settled.outputTokens).toBe(Math.ceil('one two three'.length / 4));
    expect(settled.amount).toBeGreaterThan(0);
  });

  it('does not believe absurd usage', async () => {
    g.fake.on(CHAT.deployment, {
      kind: 'reply',
      reply: { text: TEXT, wireUsage: '{"prompt_tokens":12,"completion_tokens":1e12,"total_tokens":1e12}' },
    });
    const { res } = await call(surface, CHAT.slug, false);
    expect(res.status).toBe(200);
    const settled = await settlementOf(res);
    // The cap is 1,000: 10^12 output tokens is not believed, the delivered text is counted instead.
    expect(settled.outputTokens).toBe(Math.ceil(TEXT.length / 4));
    expect(settled.inputTokens).toBe(12);
  });
});

describe("a messages client's max_tokens 1 (Claude Code's quota probe) on the Responses API, which takes no cap below 16", () => {
  it('is served: the deployment is sent 16, and its count is billed as it reported it', async () => {
    g.fake.on(RESPONSES.deployment, { kind: 'reply', reply: { text: 'Hi', finish: 'length', usage: { input: 8, output: 16 } } });
    const res = await fetch(`${g.baseUrl}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: RESPONSES.slug, max_tokens: 1, messages: [{ role: 'user', content: 'quota' }] }),
    });
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
      const res = await fetch(`${g.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(sent(CHAT.deployment).body).toMatchObject({ ...body, model: CHAT.deployment });
      const cost = chargeOf(CHAT.prices, USAGE) / 1e9;
      if (stream) {
        const chunks = sseEvents(text)
          .filter((e) => e.data !== '[DONE]')
          .map((e) => e.data);
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
    const res = await fetch(`${g.baseUrl}/api/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify(ask),
    });
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
    const { res, text } = await call(SURFACES[0], CHAT.slug, false);
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(text).toContain(`Please retry after ${AZURE_RETRY_AFTER_SECONDS} seconds`);
    expect((await endingOf(res)).type).toBe('ReservationReleased');
  });
});
