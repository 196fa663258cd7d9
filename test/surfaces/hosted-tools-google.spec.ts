import { OMITTED_TOOLS_HEADER } from '../../src/canonical/hosted-tools';
import { parseCredits } from '../../src/ledger/money';
import type { FakeSearch } from '../support/fake-upstream';
import { groundingRedirect } from '../support/fakes/gemini';
import { auditThenClose, startGateway, TestGateway } from '../support/gateway';
import { searchCharge, SEARCHES, USAGE } from '../support/hosted-tools';
import { modelEntry, vertexHost, withOwn } from '../support/spec-catalogue';
import { GENERATE_CONTENT, sseData } from '../support/surfaces';
import { tempDir } from '../support/temp';
import { throughGateway } from '../support/through-gateway';

/**
 * Hosted web search on Google's hosts, billed per use as Google bills it: on a `gemini` host (and on
 * a `vertex` host's Google publisher) a web search offered by any client — a Gemini client's
 * `googleSearch`, a Responses `web_search`, a messages `web_search_*` server tool, chat completions'
 * `web_search_options` — runs as Google Search grounding, counted per grounded prompt on Gemini 2.5
 * and per distinct non-empty query on Gemini 3, its supports given back as citations; Claude on a
 * `vertex` host runs the messages format's server tool. Each charge is exact, and `ledger audit`
 * recomputes them.
 */

const PRICES = {
  gemini25: { input: '0.30', output: '2.50', webSearch: '35.00', webFetch: '0' },
  gemini3: { input: '2.00', output: '12.00', webSearch: '14.00' },
  claude: { input: '3.00', output: '15.00', webSearch: '10.00' },
};
const GEMINI25 = { slug: 'test/gemini-grounded', id: 'a1a1a1a1-a1a1-4a1a-8a1a-a1a1a1a1a1a1', hostModel: 'gemini-2.5-flash' };
const GEMINI3 = { slug: 'test/gemini-3-grounded', id: 'a2a2a2a2-a2a2-4a2a-8a2a-a2a2a2a2a2a2', hostModel: 'gemini-3-pro-preview' };
const VERTEX_GEMINI = { slug: 'test/vertex-grounded', id: 'a3a3a3a3-a3a3-4a3a-8a3a-a3a3a3a3a3a3', hostModel: 'gemini-2.5-pro' };
const VERTEX_GEMINI3 = {
  slug: 'test/vertex-3-grounded',
  id: 'a5a5a5a5-a5a5-4a5a-8a5a-a5a5a5a5a5a5',
  hostModel: 'gemini-3-flash-preview',
};
const VERTEX_CLAUDE = {
  slug: 'test/vertex-claude-search',
  id: 'a4a4a4a4-a4a4-4a4a-8a4a-a4a4a4a4a4a4',
  hostModel: 'claude-sonnet-4-5@20250929',
};
/** The most uses of each class a request may make (HOSTED_TOOL_MAX_USES). */
const MAX_USES = 5;

const files = tempDir('grounding-keys');

/** A model of this spec's, on one host at `pricing`. */
const entry = (m: typeof GEMINI25, host: string, pricing: Record<string, string>) =>
  modelEntry(m, [{ host, model: m.hostModel, pricing }], { reasoning: false });

const catalogue = withOwn((fake) => ({
  hosts: [
    { id: 'fake-gemini', kind: 'gemini', baseUrl: `${fake.url}/v1beta`, apiKeyEnv: 'FAKE_OPENAI_KEY' },
    vertexHost(fake, 'fake-vertex', files.path),
  ],
  models: [
    entry(GEMINI25, 'fake-gemini', PRICES.gemini25),
    entry(GEMINI3, 'fake-gemini', PRICES.gemini3),
    entry(VERTEX_GEMINI, 'fake-vertex', PRICES.gemini25),
    entry(VERTEX_GEMINI3, 'fake-vertex', PRICES.gemini3),
    entry(VERTEX_CLAUDE, 'fake-vertex', PRICES.claude),
  ],
}));

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ catalogue, env: { HOSTED_TOOL_MAX_USES: String(MAX_USES) } });
});
afterAll(async () => {
  try {
    await auditThenClose(g);
  } finally {
    files.cleanup();
  }
});

const { post, send, sent, settlementOf } = throughGateway(() => g);

/** Two sentences, the first with a character of two UTF-8 bytes: Google's supports index bytes, citations characters. */
const TEXT = 'Il fait 21 °C à Paris. Sunny all day.';
const FIRST = 'Il fait 21 °C à Paris.';

const nano = (dollars: string) => BigInt(parseCredits(dollars));

/** A Gemini client's call: whole, or streamed over SSE; its answer read whole. */
const generate = (slug: string, body: Record<string, unknown>, stream: boolean) => send(GENERATE_CONTENT, slug, stream, body);

/** The citations the fake's grounding gives: each sentence cites every page (by Google's redirect), at character offsets. */
const cited = (searches: FakeSearch[]) =>
  [
    [0, FIRST.length],
    [FIRST.length + 1, TEXT.length],
  ].flatMap(([start, end]) =>
    searches.map((s) => ({ url: groundingRedirect(s.url), title: new URL(s.url).hostname, start, end })),
  );

describe('a Gemini client offering googleSearch on a gemini host: grounding run and billed', () => {
  it.each([false, true])('Gemini 2.5, streamed: %s — one grounded prompt, however many queries', async (stream) => {
    g.fake.on(GEMINI25.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES, usage: USAGE } });
    const { res, text } = await generate(
      GEMINI25.slug,
      { contents: [{ role: 'user', parts: [{ text: 'Weather in Paris?' }] }], tools: [{ googleSearch: {} }] },
      stream,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBeNull();
    expect(sent(GEMINI25.hostModel).body.tools).toEqual([{ googleSearch: {} }]);
    const replies = stream ? sseData(text) : [JSON.parse(text)];
    expect(
      replies
        .flatMap((r) => r.candidates?.[0]?.content?.parts ?? [])
        .map((p: any) => p.text ?? '')
        .join(''),
    ).toBe(TEXT);
    // The host's grounding comes back on the last response: each page once, each sentence's support in bytes.
    const chunks = SEARCHES.map((s) => ({ web: { uri: groundingRedirect(s.url), title: new URL(s.url).hostname } }));
    expect(replies.at(-1).candidates[0].groundingMetadata).toEqual({
      groundingChunks: chunks,
      groundingSupports: [
        { segment: { startIndex: 0, endIndex: Buffer.byteLength(FIRST), text: FIRST }, groundingChunkIndices: [0, 1, 2] },
        {
          segment: { startIndex: Buffer.byteLength(FIRST) + 1, endIndex: Buffer.byteLength(TEXT), text: 'Sunny all day.' },
          groundingChunkIndices: [0, 1, 2],
        },
      ],
    });

    const settled = await settlementOf(res);
    // $35 per 1,000 grounded prompts: 3 queries, one prompt = 35,000,000 nano-credits beside the tokens.
    expect(settled.amount).toBe(searchCharge(PRICES.gemini25, 1));
    expect(settled).toMatchObject({
      host: 'fake-gemini',
      inputTokens: USAGE.input,
      outputTokens: USAGE.output,
      hostedToolUses: { webSearch: 1 },
      prices: { hostedToolUses: { webSearch: 35_000_000_000 } },
    });
    expect(settled).not.toHaveProperty('usageFlag');
  });

  it.each([false, true])('Gemini 3, streamed: %s — each distinct non-empty query', async (stream) => {
    const queries = ['paris weather', '', 'paris forecast', 'paris weather', 'paris rain', ''];
    g.fake.on(GEMINI3.hostModel, {
      kind: 'reply',
      reply: { text: TEXT, searches: SEARCHES, webSearchQueries: queries, usage: USAGE },
    });
    const { res } = await generate(
      GEMINI3.slug,
      { contents: [{ role: 'user', parts: [{ text: 'Weather in Paris?' }] }], tools: [{ googleSearch: {} }] },
      stream,
    );
    expect(res.status).toBe(200);
    const settled = await settlementOf(res);
    expect(settled.hostedToolUses).toEqual({ webSearch: 3 });
    expect(settled.amount).toBe(searchCharge(PRICES.gemini3, 3));
  });

  it('a Gemini client on a host that runs no search: googleSearch left out and announced, nothing billed for it', async () => {
    g.fake.on('fake-gpt', { kind: 'reply', reply: { text: 'no search', usage: USAGE } });
    const { res } = await generate(
      'test/gpt',
      { contents: [{ parts: [{ text: 'news?' }] }], tools: [{ googleSearch: {} }] },
      false,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBe('googleSearch');
    expect(await settlementOf(res)).not.toHaveProperty('hostedToolUses');
  });
});

describe('a web search offered in another format, run as Google Search grounding', () => {
  it.each([false, true])(
    'a Responses client on a gemini host (streamed: %s): grounded, its supports as url_citation annotations, billed',
    async (stream) => {
      g.fake.on(GEMINI25.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES.slice(0, 2), usage: USAGE } });
      const res = await post('responses', {
        model: GEMINI25.slug,
        input: 'Weather in Paris?',
        tools: [{ type: 'web_search' }],
        stream,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBeNull();
      expect(sent(GEMINI25.hostModel).body.tools).toEqual([{ googleSearch: {} }]);
      const text = await res.text();
      const response = stream ? sseData(text).find((e) => e.type === 'response.completed').response : JSON.parse(text);
      const message = response.output.find((item: any) => item.type === 'message');
      expect(message.content[0].text).toBe(TEXT);
      expect(message.content[0].annotations).toEqual(
        cited(SEARCHES.slice(0, 2)).map(({ url, title, start, end }) => ({
          type: 'url_citation',
          start_index: start,
          end_index: end,
          url,
          title,
        })),
      );
      const settled = await settlementOf(res);
      expect(settled.amount).toBe(searchCharge(PRICES.gemini25, 1));
      expect(settled.hostedToolUses).toEqual({ webSearch: 1 });
    },
  );

  it.each([false, true])(
    'a messages client on a Gemini 3 host (streamed: %s): the searches counted in usage.server_tool_use, billed per query',
    async (stream) => {
      g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES.slice(0, 2), usage: USAGE } });
      const res = await post('messages', {
        model: GEMINI3.slug,
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
        stream,
      });
      expect(res.status).toBe(200);
      expect(sent(GEMINI3.hostModel).body.tools).toEqual([{ googleSearch: {} }]);
      const text = await res.text();
      const usage = stream ? sseData(text).find((e) => e.type === 'message_delta').usage : JSON.parse(text).usage;
      expect(usage.server_tool_use).toMatchObject({ web_search_requests: 2 });
      const settled = await settlementOf(res);
      expect(settled.amount).toBe(searchCharge(PRICES.gemini3, 2));
      expect(settled.hostedToolUses).toEqual({ webSearch: 2 });
    },
  );
});

describe('a fetch run as URL context, its pages billed as the input they are', () => {
  it.each([false, true])(
    "a Gemini client's urlContext (streamed: %s): each page read a use, at no per-use price",
    async (stream) => {
      g.fake.on(GEMINI25.hostModel, { kind: 'reply', reply: { text: 'Both say rain.', usage: { ...USAGE, toolPrompt: 800 } } });
      const { res } = await generate(
        GEMINI25.slug,
        {
          contents: [{ role: 'user', parts: [{ text: 'Compare https://a.example/x and https://b.example/y' }] }],
          tools: [{ urlContext: {} }],
        },
        stream,
      );
      expect(res.status).toBe(200);
      expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBeNull();
      expect(sent(GEMINI25.hostModel).body.tools).toEqual([{ urlContext: {} }]);
      const settled = await settlementOf(res);
      expect(settled).toMatchObject({ inputTokens: USAGE.input + 800, hostedToolUses: { webFetch: 2 } });
      // The pages' tokens are input: (920 × $0.30 + 30 × $2.50) / 1e6, no fee per page.
      expect(settled.amount).toBe(Number((920n * nano('0.30') + 30n * nano('2.50') + 999_999n) / 1_000_000n));
    },
  );

  it("a messages client's web fetch server tool runs as URL context", async () => {
    g.fake.on(GEMINI25.hostModel, { kind: 'reply', reply: { text: 'Read it.', usage: USAGE } });
    const res = await post('messages', {
      model: GEMINI25.slug,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Summarize https://a.example/x' }],
      tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }],
    });
    expect(res.status).toBe(200);
    expect(sent(GEMINI25.hostModel).body.tools).toEqual([{ urlContext: {} }]);
    expect((await settlementOf(res)).hostedToolUses).toEqual({ webFetch: 1 });
  });

  it('a model whose entry prices no fetch leaves it out, announced', async () => {
    g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { text: 'x', usage: USAGE } });
    const { res } = await generate(
      GEMINI3.slug,
      { contents: [{ parts: [{ text: 'https://a.example' }] }], tools: [{ urlContext: {} }] },
      false,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBe('urlContext');
    expect(sent(GEMINI3.hostModel).body).not.toHaveProperty('tools');
  });
});

describe("Google Search beside the client's functions", () => {
  const tools = [{ type: 'web_search' }, { type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} } }];

  it('Gemini 2.5 refuses the two together: the search is left out and announced, the functions carried', async () => {
    g.fake.on(GEMINI25.hostModel, { kind: 'reply', reply: { text: 'No search.', usage: USAGE } });
    const res = await post('responses', { model: GEMINI25.slug, input: 'Weather?', tools });
    expect(res.status).toBe(200);
    expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBe('web_search');
    expect(sent(GEMINI25.hostModel).body.tools).toEqual([
      { functionDeclarations: [{ name: 'get_time', parametersJsonSchema: { type: 'object', properties: {} } }] },
    ]);
    expect(await settlementOf(res)).not.toHaveProperty('hostedToolUses');
  });

  it('Gemini 3 runs both, with the server-side invocations the API asks for', async () => {
    g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES.slice(0, 1), usage: USAGE } });
    const res = await post('responses', { model: GEMINI3.slug, input: 'Weather?', tools, tool_choice: 'auto' });
    expect(res.status).toBe(200);
    expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBeNull();
    const body = sent(GEMINI3.hostModel).body;
    expect(body.tools).toEqual([
      { functionDeclarations: [{ name: 'get_time', parametersJsonSchema: { type: 'object', properties: {} } }] },
      { googleSearch: {} },
    ]);
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' }, includeServerSideToolInvocations: true });
    const settled = await settlementOf(res);
    expect(settled.hostedToolUses).toEqual({ webSearch: 1 });
    expect(settled.amount).toBe(searchCharge(PRICES.gemini3, 1));
  });
});

describe("a vertex host: Google's publisher grounds, Anthropic's runs Claude's server tool", () => {
  it('Gemini 3 runs the search beside functions without the server-side invocations, a field Vertex AI does not have', async () => {
    const tools = [
      { type: 'web_search' },
      { type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} } },
    ];
    g.fake.on(VERTEX_GEMINI3.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES.slice(0, 1), usage: USAGE } });
    const res = await post('responses', { model: VERTEX_GEMINI3.slug, input: 'Weather?', tools, tool_choice: 'auto' });
    expect(res.status).toBe(200);
    const body = sent(VERTEX_GEMINI3.hostModel).body;
    expect(body.tools).toEqual([
      { functionDeclarations: [{ name: 'get_time', parametersJsonSchema: { type: 'object', properties: {} } }] },
      { googleSearch: {} },
    ]);
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
  });

  it.each([false, true])(
    'a chat-completions client offering web_search_options on Gemini 2.5 (streamed: %s): one grounded prompt billed',
    async (stream) => {
      g.fake.on(VERTEX_GEMINI.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES, usage: USAGE } });
      const res = await post('chat/completions', {
        model: VERTEX_GEMINI.slug,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        web_search_options: {},
        stream,
      });
      expect(res.status).toBe(200);
      const request = sent(VERTEX_GEMINI.hostModel);
      expect(request.path).toMatch(/\/publishers\/google\/models\/gemini-2\.5-pro:/);
      expect(request.body.tools).toEqual([{ googleSearch: {} }]);
      const text = await res.text();
      const annotations = stream
        ? sseData(text).flatMap((chunk) => chunk.choices?.[0]?.delta?.annotations ?? [])
        : JSON.parse(text).choices[0].message.annotations;
      expect(annotations).toHaveLength(cited(SEARCHES).length);
      const settled = await settlementOf(res);
      expect(settled).toMatchObject({ host: 'fake-vertex', hostedToolUses: { webSearch: 1 } });
      expect(settled.amount).toBe(searchCharge(PRICES.gemini25, 1));
    },
  );

  it.each([false, true])('a Gemini client on Gemini 3 (streamed: %s): billed per distinct query', async (stream) => {
    g.fake.on(VERTEX_GEMINI3.hostModel, {
      kind: 'reply',
      reply: { text: TEXT, searches: SEARCHES, webSearchQueries: ['a', 'b', 'a', ''], usage: USAGE },
    });
    const { res } = await generate(
      VERTEX_GEMINI3.slug,
      { contents: [{ role: 'user', parts: [{ text: 'Weather in Paris?' }] }], tools: [{ googleSearch: {} }] },
      stream,
    );
    expect(res.status).toBe(200);
    const settled = await settlementOf(res);
    expect(settled).toMatchObject({ host: 'fake-vertex', hostedToolUses: { webSearch: 2 } });
    expect(settled.amount).toBe(searchCharge(PRICES.gemini3, 2));
  });

  it.each([false, true])(
    'a messages client on Claude (streamed: %s): its server tool passed whole under the web-search beta, billed per search',
    async (stream) => {
      g.fake.on(VERTEX_CLAUDE.hostModel, {
        kind: 'reply',
        reply: { text: 'Sunny.', searches: SEARCHES.slice(0, 2), usage: USAGE },
      });
      const res = await post('messages', {
        model: VERTEX_CLAUDE.slug,
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 10 }],
        stream,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBeNull();
      const request = sent(VERTEX_CLAUDE.hostModel);
      expect(request.body.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: MAX_USES }]);
      expect(request.headers['anthropic-beta']).toBe('web-search-2025-03-05');
      const text = await res.text();
      const usage = stream ? sseData(text).find((e) => e.type === 'message_delta').usage : JSON.parse(text).usage;
      expect(usage.server_tool_use).toEqual({ web_search_requests: 2, web_fetch_requests: 0 });
      const settled = await settlementOf(res);
      expect(settled).toMatchObject({ host: 'fake-vertex', hostedToolUses: { webSearch: 2 } });
      expect(settled.amount).toBe(searchCharge(PRICES.claude, 2));
    },
  );

  it('a Responses client on Claude: translated into the server tool, billed per search', async () => {
    g.fake.on(VERTEX_CLAUDE.hostModel, { kind: 'reply', reply: { text: 'Sunny.', searches: SEARCHES, usage: USAGE } });
    const res = await post('responses', {
      model: VERTEX_CLAUDE.slug,
      input: 'Weather in Paris?',
      tools: [{ type: 'web_search' }],
    });
    expect(res.status).toBe(200);
    const request = sent(VERTEX_CLAUDE.hostModel);
    expect(request.body.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: MAX_USES }]);
    expect(request.headers['anthropic-beta']).toBe('web-search-2025-03-05');
    const settled = await settlementOf(res);
    expect(settled.hostedToolUses).toEqual({ webSearch: 3 });
    expect(settled.amount).toBe(searchCharge(PRICES.claude, 3));
  });
});

it('`ledger audit` recomputes every charge, grounding included, and finds the ledger clean', async () => {
  expect((await g.audit()).differences).toEqual([]);
  const { code, report } = await g.auditWithOperatorTool();
  expect(report.differences).toEqual([]);
  expect(code).toBe(0);
});
