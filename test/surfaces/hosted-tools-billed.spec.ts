import { OMITTED_TOOLS_HEADER } from '../../src/canonical/hosted-tools';
import { auditThenClose, startGateway, TestGateway } from '../support/gateway';
import { searchCharge, SEARCHES, USAGE } from '../support/hosted-tools';
import { createKey } from '../support/keys';
import { fundedOrganization } from '../support/runtime';
import { modelEntry, withOwn } from '../support/spec-catalogue';
import { sseData } from '../support/surfaces';
import { throughGateway } from '../support/through-gateway';

/**
 * Hosted tools billed per use: a web search offered by a Responses client to a model on an
 * `openai-responses` host and by a messages client to a model on an `anthropic` host is carried
 * (passed whole), and across the two formats translated into the host's own web search; the
 * host's count of searches (its `web_search_call` items, its `usage.server_tool_use`) is settled at
 * the catalogue's per-use price beside the tokens, exactly, shown in the request log and
 * /generation, and recomputed by `ledger audit`.
 */

const PRICES = {
  responses: { input: '1.00', cacheRead: '0.25', output: '2.00', webSearch: '10.00' },
  claude: { input: '3.00', output: '15.00', webSearch: '10.00' },
};
const RESPONSES = {
  slug: 'test/responses-search',
  id: 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  hostModel: 'fake-responses-search',
};
const CLAUDE = { slug: 'test/claude-search', id: 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', hostModel: 'fake-claude-search' };
/** The most searches a request may make (HOSTED_TOOL_MAX_USES): its reservation holds for them. */
const MAX_USES = 4;

/** A model of this spec's, on one host at `pricing`. */
const entry = (m: typeof RESPONSES, host: string, pricing: Record<string, string>) =>
  modelEntry(m, [{ host, model: m.hostModel, pricing }], { reasoning: false });

const catalogue = withOwn((fake) => ({
  hosts: [{ id: 'fake-responses', kind: 'openai-responses', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_OPENAI_KEY' }],
  models: [entry(RESPONSES, 'fake-responses', PRICES.responses), entry(CLAUDE, 'fake-anthropic', PRICES.claude)],
}));

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ catalogue, env: { HOSTED_TOOL_MAX_USES: String(MAX_USES) } });
});
afterAll(() => auditThenClose(g));

const { post, sent, settlementOf } = throughGateway(() => g);

const TEXT = 'Sunny in Paris today.';

describe('a Responses client on an openai-responses host: its web search passed whole, billed per use', () => {
  it.each([false, true])('streamed: %s', async (stream) => {
    g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES, usage: USAGE } });
    const res = await post('responses', {
      model: RESPONSES.slug,
      input: 'Weather in Paris?',
      tools: [{ type: 'web_search' }],
      stream,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBeNull();
    const text = await res.text();
    // The host got the tool, bounded to the searches held for.
    expect(sent(RESPONSES.hostModel).body).toMatchObject({ tools: [{ type: 'web_search' }], max_tool_calls: MAX_USES });
    // The client gets the host's own items: each search (its action and status) and the text's citations.
    const response = stream ? sseData(text).find((e) => e.type === 'response.completed').response : JSON.parse(text);
    const calls = response.output.filter((item: any) => item.type === 'web_search_call');
    expect(calls.map((c: any) => [c.status, c.action.type, c.action.query])).toEqual(
      SEARCHES.map((s) => ['completed', 'search', s.query]),
    );
    const message = response.output.find((item: any) => item.type === 'message');
    expect(message.content[0].annotations.map((a: any) => [a.type, a.url])).toEqual(SEARCHES.map((s) => ['url_citation', s.url]));
    if (stream) expect(sseData(text).filter((e) => e.type === 'response.web_search_call.completed')).toHaveLength(3);

    const settled = await settlementOf(res);
    // $10 per 1,000 searches: 3 searches = 30,000,000 nano-credits, beside the tokens, rounded up once.
    expect(settled.amount).toBe(searchCharge(PRICES.responses, 3));
    expect(settled).toMatchObject({
      host: 'fake-responses',
      inputTokens: USAGE.input,
      outputTokens: USAGE.output,
      hostedToolUses: { webSearch: 3 },
      prices: { hostedToolUses: { webSearch: 10_000_000_000 } },
    });
    expect(settled).not.toHaveProperty('usageFlag');
    // The usage the client sees costs the same.
    expect(response.usage.cost).toBe(searchCharge(PRICES.responses, 3) / 1e9);
  });
});

describe("a Responses client's next turn, sending back every output item (as Codex and the Agents SDK do, with store: false)", () => {
  /** The first turn's reply, from the openai-responses host: its web_search_call items, then the message citing them. */
  async function firstTurn() {
    g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES.slice(0, 2), usage: USAGE } });
    const res = await post('responses', { model: RESPONSES.slug, input: 'Weather in Paris?', tools: [{ type: 'web_search' }] });
    expect(res.status).toBe(200);
    const output = ((await res.json()) as { output: Array<{ type: string }> }).output;
    expect(output.map((item) => item.type)).toEqual(['web_search_call', 'web_search_call', 'message']);
    return [{ role: 'user', content: 'Weather in Paris?' }, ...output, { role: 'user', content: 'And tomorrow?' }];
  }

  it('to a model on an openai-responses host: the items reach the host whole, in the body it is passed', async () => {
    const input = await firstTurn();
    const res = await post('responses', { model: RESPONSES.slug, input, tools: [{ type: 'web_search' }] });
    expect(res.status).toBe(200);
    expect(sent(RESPONSES.hostModel).body.input).toEqual(input);
  });

  it('to a model on an anthropic host (translated): the items, which have no counterpart, are left out; the text they led to is carried', async () => {
    const input = await firstTurn();
    g.fake.on(CLAUDE.hostModel, { kind: 'reply', reply: { text: TEXT, searches: [], usage: USAGE } });
    const res = await post('responses', { model: CLAUDE.slug, input, tools: [{ type: 'web_search' }] });
    expect(res.status).toBe(200);
    expect(sent(CLAUDE.hostModel).body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: TEXT },
      { role: 'user', content: 'And tomorrow?' },
    ]);
  });
});

describe('a messages client on an anthropic host: its server tool passed whole, billed per use', () => {
  it.each([false, true])('streamed: %s', async (stream) => {
    g.fake.on(CLAUDE.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES.slice(0, 2), usage: USAGE } });
    const res = await post('messages', {
      model: CLAUDE.slug,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 10 }],
      stream,
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    // The host got the server tool, its max_uses lowered to the searches held for.
    expect(sent(CLAUDE.hostModel).body.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: MAX_USES }]);
    // The client gets the host's blocks: each search, its results, the text's citations, and the count in the usage.
    const blocks = stream
      ? sseData(text)
          .filter((e) => e.type === 'content_block_start')
          .map((e) => e.content_block)
      : JSON.parse(text).content;
    expect(blocks.map((b: any) => b.type)).toEqual([
      'server_tool_use',
      'web_search_tool_result',
      'server_tool_use',
      'web_search_tool_result',
      'text',
    ]);
    const usage = stream ? sseData(text).find((e) => e.type === 'message_delta').usage : JSON.parse(text).usage;
    expect(usage.server_tool_use).toEqual({ web_search_requests: 2, web_fetch_requests: 0 });

    const settled = await settlementOf(res);
    expect(settled.amount).toBe(searchCharge(PRICES.claude, 2));
    expect(settled).toMatchObject({ host: 'fake-anthropic', hostedToolUses: { webSearch: 2 } });
  });
});

describe('a web search offered in one format, run by a host of the other (translated)', () => {
  it.each([false, true])(
    "a Responses client on an anthropic host (streamed: %s): Anthropic's web search runs it, the text comes back with its citations as url_citation annotations, the searches billed",
    async (stream) => {
      g.fake.on(CLAUDE.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES, usage: USAGE } });
      const res = await post('responses', {
        model: CLAUDE.slug,
        input: 'Weather in Paris?',
        tools: [{ type: 'web_search' }, { type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} } }],
        stream,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBeNull();
      const body = sent(CLAUDE.hostModel).body;
      expect(body.tools).toEqual([
        { name: 'get_time', input_schema: { type: 'object', properties: {} } },
        { type: 'web_search_20250305', name: 'web_search', max_uses: MAX_USES },
      ]);
      const text = await res.text();
      const response = stream ? sseData(text).find((e) => e.type === 'response.completed').response : JSON.parse(text);
      const message = response.output.find((item: any) => item.type === 'message');
      expect(message.content[0].text).toBe(TEXT);
      // The fake cites every page for the whole text.
      const cited = SEARCHES.map((s) => ({
        type: 'url_citation',
        start_index: 0,
        end_index: TEXT.length,
        url: s.url,
        title: s.title,
      }));
      expect(message.content[0].annotations).toEqual(cited);
      if (stream)
        expect(
          sseData(text)
            .filter((e) => e.type === 'response.output_text.annotation.added')
            .map((e) => e.annotation),
        ).toEqual(cited);
      const settled = await settlementOf(res);
      expect(settled.amount).toBe(searchCharge(PRICES.claude, 3));
      expect(settled.hostedToolUses).toEqual({ webSearch: 3 });
    },
  );

  it.each([false, true])(
    'a chat-completions client offering web_search_options on an anthropic host (streamed: %s): searched, cited, billed',
    async (stream) => {
      g.fake.on(CLAUDE.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES.slice(0, 1), usage: USAGE } });
      const res = await post('chat/completions', {
        model: CLAUDE.slug,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        web_search_options: {},
        stream,
      });
      expect(res.status).toBe(200);
      expect(sent(CLAUDE.hostModel).body.tools).toEqual([
        { type: 'web_search_20250305', name: 'web_search', max_uses: MAX_USES },
      ]);
      const text = await res.text();
      const annotations = stream
        ? sseData(text).flatMap((chunk) => chunk.choices?.[0]?.delta?.annotations ?? [])
        : JSON.parse(text).choices[0].message.annotations;
      expect(annotations).toEqual([
        {
          type: 'url_citation',
          url_citation: { start_index: 0, end_index: TEXT.length, url: SEARCHES[0].url, title: SEARCHES[0].title },
        },
      ]);
      const settled = await settlementOf(res);
      expect(settled.amount).toBe(searchCharge(PRICES.claude, 1));
    },
  );

  it("a messages client on an openai-responses host: OpenAI's web_search runs it, billed per web_search_call; its text comes without citations (they would need the host's encrypted indexes)", async () => {
    g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES.slice(0, 1), usage: USAGE } });
    const res = await post('messages', {
      model: RESPONSES.slug,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      stream: true,
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(sent(RESPONSES.hostModel).body).toMatchObject({ tools: [{ type: 'web_search' }], max_tool_calls: MAX_USES });
    const deltas = sseData(text).filter((e) => e.type === 'content_block_delta' && e.delta.type === 'text_delta');
    expect(deltas.map((e) => e.delta.text).join('')).toBe(TEXT);
    // Its searches counted in the format's own field; no citations (they would need the host's encrypted indexes).
    expect(sseData(text).find((e) => e.type === 'message_delta').usage.server_tool_use).toEqual({
      web_search_requests: 1,
      web_fetch_requests: 0,
    });
    expect(text).not.toContain('web_search_result_location');
    const settled = await settlementOf(res);
    expect(settled.amount).toBe(searchCharge(PRICES.responses, 1));
    expect(settled.hostedToolUses).toEqual({ webSearch: 1 });
  });
});

describe('what is held, shown and audited', () => {
  it('a request carrying a web search holds for the most searches it may make: a balance short of them is refused (402)', async () => {
    // $0.02: far more than the tokens of a short request, less than 4 searches at $10/1,000 ($0.04).
    const orgId = await fundedOrganization(g.t.runtime, 20_000_000);
    const { secret } = await createKey(g.t.runtime, orgId, 'poor');
    await g.t.runtime.projector.catchUp();
    g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply: { text: TEXT, usage: USAGE } });
    const ask = { model: RESPONSES.slug, input: 'Weather?', max_output_tokens: 50 };
    const before = g.fake.requests.length;
    const refused = await post('responses', { ...ask, tools: [{ type: 'web_search' }] }, secret);
    expect(refused.status).toBe(402);
    expect(g.fake.requests.length).toBe(before);
    // Without the tool, the same request is covered.
    expect((await post('responses', ask, secret)).status).toBe(200);
  });

  it('a host reporting more searches than were held for is billed the bound, and the settlement says why', async () => {
    const many = Array.from({ length: MAX_USES + 2 }, (_, i) => ({ ...SEARCHES[0], query: `q${i}` }));
    g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply: { text: TEXT, searches: many, usage: USAGE } });
    const res = await post('responses', { model: RESPONSES.slug, input: 'Search a lot', tools: [{ type: 'web_search' }] });
    expect(res.status).toBe(200);
    const settled = await settlementOf(res);
    expect(settled.hostedToolUses).toEqual({ webSearch: MAX_USES });
    expect(settled.amount).toBe(searchCharge(PRICES.responses, MAX_USES));
    expect(settled.usageFlag).toBe(`${MAX_USES + 2} webSearch uses exceed the bound (${MAX_USES})`);
    // Never more than was held.
    expect(settled.amount).toBeLessThanOrEqual(settled.held);
  });

  it('the model list shows the per-use prices beside the token prices', async () => {
    const model = await fetch(`${g.baseUrl}/api/v1/models/${RESPONSES.slug}`, {
      headers: { authorization: `Bearer ${g.key}` },
    }).then((r) => r.json() as Promise<any>);
    expect(model.hosted_tool_pricing).toEqual({ web_search: '10.00', unit: 'USD per 1,000 uses' });
    const plain = await fetch(`${g.baseUrl}/api/v1/models/test/gpt`, { headers: { authorization: `Bearer ${g.key}` } }).then(
      (r) => r.json() as Promise<any>,
    );
    expect(plain).not.toHaveProperty('hosted_tool_pricing');
  });

  it('the request log and /generation show the searches billed', async () => {
    g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply: { text: TEXT, searches: SEARCHES, usage: USAGE } });
    const res = await post('responses', { model: RESPONSES.slug, input: 'Weather?', tools: [{ type: 'web_search' }] });
    const requestId = res.headers.get('x-request-id')!;
    expect((await g.logged(requestId)).hostedToolUses).toEqual({ webSearch: 3 });
    const generation = await fetch(`${g.baseUrl}/api/v1/generation?id=${requestId}`, {
      headers: { authorization: `Bearer ${g.key}` },
    }).then((r) => r.json() as Promise<any>);
    expect(generation.data).toMatchObject({ hosted_tool_uses: { web_search: 3 }, cost_nano: searchCharge(PRICES.responses, 3) });
  });

  it('a model whose entry prices no search leaves the tool out, announced, and bills none', async () => {
    // test/gpt is on a chat-completions host, which runs no hosted tool.
    const res = await post('responses', { model: 'test/gpt', input: 'Weather?', tools: [{ type: 'web_search' }] });
    expect(res.status).toBe(200);
    expect(res.headers.get(OMITTED_TOOLS_HEADER)).toBe('web_search');
    expect(await settlementOf(res)).not.toHaveProperty('hostedToolUses');
  });

  it('the metrics count the searches billed, by class, model and host, as the request log has them', async () => {
    await g.settled();
    const text = await fetch(`${g.baseUrl}/metrics`).then((r) => r.text());
    const counted = [...text.matchAll(/^gateway_hosted_tool_uses_total\{([^}]*)\} (\d+)$/gm)].map(([, labels, n]) => [
      labels,
      Number(n),
    ]);
    const logged = (await g.t.runtime.projections.recentRequests(g.orgId, 1000)).filter((e) => e.hostedToolUses);
    const byModel = (slug: string) =>
      logged.filter((e) => e.model === slug).reduce((n, e) => n + (e.hostedToolUses!.webSearch ?? 0), 0);
    expect(counted).toEqual(
      expect.arrayContaining([
        ['class="webSearch",model="test/responses-search",host="fake-responses"', byModel(RESPONSES.slug)],
        ['class="webSearch",model="test/claude-search",host="fake-anthropic"', byModel(CLAUDE.slug)],
      ]),
    );
    expect(byModel(RESPONSES.slug)).toBeGreaterThan(0);
  });

  it('`ledger audit` recomputes every charge, searches included, and finds the ledger clean', async () => {
    // Replayed here, and by the operator tool beside the serving gateway.
    expect((await g.audit()).differences).toEqual([]);
    const { code, report } = await g.auditWithOperatorTool();
    expect(report.differences).toEqual([]);
    expect(report.clean).toBe(true);
    expect(code).toBe(0);
  });
});
