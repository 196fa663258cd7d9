import type { ReservationSettled } from '../../src/ledger/ledger.events';
import { parseCredits } from '../../src/ledger/money';
import { DEFAULT_SEARCH, FakeBehaviour, FakeUpstream, ReceivedRequest } from '../support/fake-upstream';
import { AgentRun, CODEX, codexExec } from '../support/agents';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import {
  catalogueWithNewKinds,
  expectServedAndBilled,
  NEW_KIND_KEYS,
  NEW_KIND_MODELS,
  NewKindModel,
  toolResultsIn,
} from '../support/new-kinds';
import { LogCapture } from '../support/log-capture';
import { tempDir } from '../support/temp';

// Codex CLI as users run it: `codex exec`, unmodified, with a custom model provider set up as its
// docs say (base_url = "{base}/api/v1", wire_api = "responses", env_key), against the gateway's
// Responses route; the fake upstream plays the model behind an openai or an anthropic host.
// Codex is not among the dev dependencies yet: without it, these tests are skipped, saying so.
// Its configuration is the default one: the hosted web search it offers is carried to a model on an
// openai-responses host (which runs it) and billed per search; on the other hosts it is left out,
// and the request's log line says so.
const M = TEST_MODELS;
/** A model on an openai-responses host, its web searches at $10 per 1,000. */
const RESPONSES = {
  slug: 'test/codex-responses',
  id: 'dddddddd-dddd-4ddd-8ddd-dddddddddddd',
  hostModel: 'fake-codex-responses',
  pricing: { input: '1.25', cacheRead: '0.125', output: '10.00', webSearch: '10.00' },
};

/** The test catalogue with the models on the new host kinds, and RESPONSES on their openai-responses host. */
function catalogue(fake: FakeUpstream) {
  const withKinds = catalogueWithNewKinds(fake);
  return {
    hosts: withKinds.hosts,
    models: [
      ...withKinds.models,
      {
        slug: RESPONSES.slug,
        id: RESPONSES.id,
        name: 'Test Codex on Responses',
        contextLength: 128_000,
        maxOutputTokens: 1000,
        reasoning: true,
        hosts: [{ host: 'fake-responses', model: RESPONSES.hostModel, pricing: RESPONSES.pricing }],
      },
    ],
  };
}
const REPLY = 'Hello from the model, through the gateway.';
const MISSING = CODEX === null ? ' [skipped: @openai/codex is not installed: npm install --save-dev @openai/codex]' : '';

let g: TestGateway;
const tmp = tempDir('codex');
const log = new LogCapture();

beforeAll(async () => {
  if (CODEX === null) return;
  g = await startGateway({ catalogue, hostKeys: NEW_KIND_KEYS, logStream: log });
});
afterAll(async () => {
  tmp.cleanup();
  if (CODEX === null) return;
  await g.settled();
  const report = await g.audit();
  expect(report.differences).toEqual([]);
  await g.close();
});

/** What Codex printed (`--json`: one event per line). */
const eventsOf = (run: AgentRun) =>
  run.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { type: string; item?: { type: string; text?: string }; error?: unknown });
const agentMessages = (run: AgentRun) =>
  eventsOf(run)
    .filter((e) => e.type === 'item.completed' && e.item?.type === 'agent_message')
    .map((e) => e.item!.text);

/** Whether a request carries a tool's result, in either wire format. */
const hasToolResult = (request: ReceivedRequest): boolean =>
  ((request.body as { messages?: Array<{ role: string; content?: unknown }> }).messages ?? []).some(
    (m) => m.role === 'tool' || (Array.isArray(m.content) && m.content.some((b: { type?: string }) => b.type === 'tool_result')),
  );

/**
 * The model of a shell turn: it asks Codex to run a command, then, shown the command's output
 * (`answered`), says what it printed; with the host's `usage` on both replies when given.
 */
const shellTurn =
  (answered: (request: ReceivedRequest) => boolean, usage?: NewKindModel['usage']) =>
  (request: ReceivedRequest): FakeBehaviour =>
    answered(request)
      ? { kind: 'reply', reply: { text: 'The command printed 42.', ...(usage ? { usage } : {}) } }
      : {
          kind: 'reply',
          reply: {
            toolCalls: [
              { id: 'call_shell_1', name: 'exec_command', arguments: JSON.stringify({ cmd: 'echo $((6 * 7))-from-shell' }) },
            ],
            ...(usage ? { usage } : {}),
          },
        };

const hosts: Array<[string, { slug: string; hostModel: string }, string]> = [
  ['a model on an openai host', M.gpt, '/v1/chat/completions'],
  ['a model on an anthropic host', M.claude, '/v1/messages'],
];

(CODEX === null ? describe.skip.each(hosts) : describe.each(hosts))(
  `Codex CLI (codex exec, a custom provider with wire_api = "responses") on %s${MISSING}`,
  (_where, model, upstreamPath) => {
    it('completes a prompt: its instructions and tools reach the host, the answer is printed, the request is billed on the responses surface', async () => {
      g.fake.on(model.hostModel, { kind: 'reply', reply: { text: REPLY } });
      const before = g.fake.requests.length;
      const run = await codexExec(tmp, g, model.slug, 'say hi');
      expect(run).toMatchObject({ code: 0 });
      expect(agentMessages(run)).toEqual([REPLY]);
      expect(eventsOf(run).at(-1)).toMatchObject({ type: 'turn.completed', usage: { input_tokens: 12, output_tokens: 6 } });

      const sent = g.fake.requests.slice(before).filter((r) => r.path === upstreamPath);
      expect(sent).toHaveLength(1);
      const text = JSON.stringify(sent[0].body);
      expect(text).toContain('You are a coding agent running in the Codex CLI');
      expect(text).toContain('say hi');
      // Its shell tool, and the functions of its namespace tool under joined names.
      expect(text).toContain('exec_command');
      expect(text).toContain('multi_agent_v1__spawn_agent');
      await g.settled();
      const [entry] = await g.t.runtime.projections.recentRequests(g.orgId, 1);
      expect(entry).toMatchObject({ surface: 'responses', model: model.slug, status: 'ok', inputTokens: 12, outputTokens: 6 });
      // Its hosted web search, offered by default, left out of the call and announced.
      expect(text).not.toContain('web_search');
      expect(await log.request(entry.requestId)).toMatchObject({ status: 200, omittedTools: ['web_search'] });
    }, 90_000);

    it('completes a tool-using turn: the model calls exec_command, Codex runs it and sends the output back', async () => {
      g.fake.on(model.hostModel, shellTurn(hasToolResult));
      const before = g.fake.requests.length;
      const run = await codexExec(tmp, g, model.slug, 'Work out six times seven with the shell');
      expect(run).toMatchObject({ code: 0 });
      expect(agentMessages(run)).toEqual(['The command printed 42.']);
      const sent = g.fake.requests.slice(before).filter((r) => r.path === upstreamPath);
      const withResult = sent.find(hasToolResult);
      expect(withResult).toBeDefined();
      // The command's output, which only running it produces (the arguments hold `$((6 * 7))`, not 42).
      expect(JSON.stringify(withResult!.body)).toContain('42-from-shell');
    }, 90_000);
  },
);

(CODEX === null ? describe.skip : describe)(
  `Codex CLI (default configuration) on a model on an openai-responses host${MISSING}`,
  () => {
    it('its hosted web search is carried whole, the host searches, and each search is billed at its price', async () => {
      g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply: { text: REPLY, usage: { input: 200, output: 20 } } });
      const before = g.fake.requests.length;
      const run = await codexExec(tmp, g, RESPONSES.slug, 'What is the weather in Paris?');
      expect(run).toMatchObject({ code: 0 });
      expect(agentMessages(run)).toEqual([REPLY]);
      // Codex shows the search the host ran (its web_search_call item, passed whole).
      const searches = eventsOf(run).filter((e) => e.type === 'item.completed' && e.item?.type === 'web_search');
      expect(searches.map((e) => (e.item as { action?: { query?: string } }).action?.query)).toEqual([DEFAULT_SEARCH.query]);

      const sent = g.fake.requests.slice(before).filter((r) => r.path === '/v1/responses');
      expect(sent).toHaveLength(1);
      // Codex's body passed whole: its web search among its tools, bounded to the searches held for.
      const tools = (sent[0].body as { tools: Array<{ type: string }> }).tools;
      expect(tools.map((t) => t.type)).toContain('web_search');
      expect(sent[0].body).toMatchObject({ max_tool_calls: 20 });

      await g.settled();
      const [entry] = await g.t.runtime.projections.recentRequests(g.orgId, 1);
      expect(entry).toMatchObject({
        surface: 'responses',
        model: RESPONSES.slug,
        status: 'ok',
        hostedToolUses: { webSearch: 1 },
      });
      // Nothing left out, nothing announced.
      expect(entry).not.toHaveProperty('omittedTools');
      expect(await log.request(entry.requestId)).not.toHaveProperty('omittedTools');
      const events = await g.t.runtime.events.readAll(0, 100_000);
      const settled = events.find(
        (e) => e.type === 'ReservationSettled' && (e.data as { requestId: string }).requestId === entry.requestId,
      )!.data as ReservationSettled['data'];
      // The fake ran one search (DEFAULT_SEARCH): 200 × $1.25/M + 20 × $10/M + 1 × $10/1,000, rounded up once.
      const nano = (dollars: string) => BigInt(parseCredits(dollars));
      const p = RESPONSES.pricing;
      const exact = 200n * nano(p.input) + 20n * nano(p.output) + 1n * nano(p.webSearch) * 1000n;
      expect(settled.amount).toBe(Number((exact + 999_999n) / 1_000_000n));
      expect(settled).toMatchObject({
        hostedToolUses: { webSearch: 1 },
        prices: { hostedToolUses: { webSearch: 10_000_000_000 } },
      });
    }, 90_000);

    it('its next turn sends back the web_search_call item the host returned (store: false), and is served', async () => {
      g.fake.on(
        RESPONSES.hostModel,
        shellTurn((request) => toolResultsIn(request).length > 0),
      );
      const before = g.fake.requests.length;
      const run = await codexExec(tmp, g, RESPONSES.slug, 'Search, then work out six times seven with the shell');
      expect(run).toMatchObject({ code: 0 });
      expect(agentMessages(run)).toEqual(['The command printed 42.']);
      const sent = g.fake.requests.slice(before).filter((r) => r.path === '/v1/responses');
      expect(sent).toHaveLength(2);
      // The first reply's search, resent whole with the command's output.
      const input = (sent[1].body as { store: boolean; input: Array<{ type?: string }> }).input;
      expect(sent[1].body).toMatchObject({ store: false });
      expect(input).toContainEqual(
        expect.objectContaining({ type: 'web_search_call', action: expect.objectContaining({ query: DEFAULT_SEARCH.query }) }),
      );
      expect(input).toContainEqual(expect.objectContaining({ type: 'function_call_output', call_id: 'call_shell_1' }));
    }, 90_000);
  },
);

const newKinds: Array<[string, NewKindModel]> = [
  ['an openai-responses host', NEW_KIND_MODELS.responses],
  ['an azure host (a deployment on the v1 route, the Responses API)', NEW_KIND_MODELS.azureResponses],
];

(CODEX === null ? describe.skip.each(newKinds) : describe.each(newKinds))(
  `Codex CLI (codex exec, its default configuration) on a model on %s${MISSING}`,
  (_where, model) => {
    it('completes a tool-using turn: the model calls exec_command, Codex runs it and sends the output back; billed exactly', async () => {
      g.fake.on(
        model.hostModel,
        shellTurn((request) => toolResultsIn(request).length > 0, model.usage),
      );
      const before = g.fake.requests.length;
      const run = await codexExec(tmp, g, model.slug, 'Work out six times seven with the shell');
      expect(run).toMatchObject({ code: 0 });
      expect(agentMessages(run)).toEqual(['The command printed 42.']);
      const sent = await expectServedAndBilled(g, model, before);
      expect(sent).toHaveLength(2);
      // Its instructions and its shell tool, in the Responses request the host got.
      expect(JSON.stringify(sent[0].body)).toContain('You are a coding agent running in the Codex CLI');
      expect(JSON.stringify(sent[0].body.tools)).toContain('exec_command');
      // The command's output, which only running it produces (the arguments hold `$((6 * 7))`, not 42), answering the call.
      expect(sent[1].body.input).toContainEqual(
        expect.objectContaining({
          type: 'function_call_output',
          call_id: 'call_shell_1',
          output: expect.stringContaining('42-from-shell'),
        }),
      );
      const [entry] = await g.t.runtime.projections.recentRequests(g.orgId, 1);
      expect(entry).toMatchObject({ surface: 'responses', model: model.slug, status: 'ok' });
    }, 90_000);
  },
);
