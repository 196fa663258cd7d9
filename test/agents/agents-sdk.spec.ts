import type { ReceivedRequest } from '../support/fake-upstream';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { expectServedAndBilled, NEW_KIND_MODELS, NewKindModel, toolResultsIn, withNewKinds } from '../support/new-kinds';

// The OpenAI Agents SDK with its default model settings (the Responses API), pointed at the
// gateway as its docs say for another OpenAI-compatible endpoint: an OpenAIProvider with the
// base URL and key. An agent with a function tool runs to its final output, whole and streamed;
// the fake upstream plays the model behind an openai or an anthropic host. The SDK is not among
// the dev dependencies yet: without it, these tests are skipped, saying so.
const M = TEST_MODELS;

const SDK = '@openai/agents';
/** Whether the SDK is installed: resolved when the tests are declared, loaded before they run. */
const installed = (() => {
  try {
    require.resolve(SDK);
    return true;
  } catch {
    return false;
  }
})();
const MISSING = installed ? '' : ` [skipped: ${SDK} is not installed: npm install --save-dev ${SDK}]`;

let sdk: any;
let g: TestGateway;

beforeAll(async () => {
  if (!installed) return;
  sdk = await import(SDK);
  sdk.setTracingDisabled(true);
  g = await startGateway(withNewKinds);
});
afterAll(async () => {
  if (!installed) return;
  await g.settled();
  const report = await g.audit();
  expect(report.differences).toEqual([]);
  await g.close();
});

/** The tool results a host was sent, in either wire format. */
const toolResults = (request: ReceivedRequest): string[] =>
  ((request.body as { messages?: Array<{ role: string; content?: unknown }> }).messages ?? []).flatMap((m) => {
    if (m.role === 'tool') return [String(m.content)];
    if (!Array.isArray(m.content)) return [];
    return m.content
      .filter((b: { type?: string }) => b.type === 'tool_result')
      .map((b: { content: string }) => String(b.content));
  });

/** An agent with one function tool, run by a runner whose provider points at the gateway. */
function weatherAgent(slug: string, calls: string[]) {
  const getWeather = sdk.tool({
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
    strict: true,
    execute: async ({ city }: { city: string }) => {
      calls.push(city);
      return `${city}: 21 degrees, from the tool`;
    },
  });
  const agent = new sdk.Agent({
    name: 'Weather',
    instructions: 'Answer with the tool.',
    model: slug,
    tools: [getWeather],
  });
  const provider = new sdk.OpenAIProvider({ apiKey: g.key, baseURL: `${g.baseUrl}/api/v1` });
  return { agent, runner: new sdk.Runner({ modelProvider: provider, tracingDisabled: true }) };
}

const hosts: Array<[string, { slug: string; hostModel: string }, string]> = [
  ['a model on an openai host', M.gpt, '/v1/chat/completions'],
  ['a model on an anthropic host', M.claude, '/v1/messages'],
];

(installed ? describe.each(hosts) : describe.skip.each(hosts))(
  `OpenAI Agents SDK (default model settings: Responses) on %s${MISSING}`,
  (_where, model, upstreamPath) => {
    beforeEach(() => {
      g.fake.on(model.hostModel, (request) =>
        toolResults(request).length > 0
          ? { kind: 'reply', reply: { text: 'It is 21 degrees in Paris.' } }
          : { kind: 'reply', reply: { toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }] } },
      );
    });

    it.each([
      ['whole', false],
      ['streamed', true],
    ])('runs an agent with a function tool to its final output (%s)', async (_how, stream) => {
      const calls: string[] = [];
      const { agent, runner } = weatherAgent(model.slug, calls);
      const before = g.fake.requests.length;
      const result = await runner.run(agent, 'Weather in Paris?', { stream });
      if (stream) {
        for await (const _event of result) {
          // drained: the run goes on as its events are read
        }
        await result.completed;
      }
      expect(result.finalOutput).toBe('It is 21 degrees in Paris.');
      expect(calls).toEqual(['Paris']);
      const sent = g.fake.requests.slice(before).filter((r) => r.path === upstreamPath);
      expect(sent).toHaveLength(2);
      expect(JSON.stringify(sent[0].body)).toContain('Answer with the tool.');
      expect(toolResults(sent[1])).toEqual(['Paris: 21 degrees, from the tool']);
      expect(sent[1].body.stream).toBe(stream);
      // Both turns came in on the Responses route.
      await g.settled();
      const logged = await g.t.runtime.projections.recentRequests(g.orgId, 2);
      expect(logged.map((e) => e.surface)).toEqual(['responses', 'responses']);
    });
  },
);

const N = NEW_KIND_MODELS;
const newKinds: Array<[string, NewKindModel]> = [
  ['an azure host (a deployment on the v1 route, the Responses API: passed whole)', N.azureResponses],
  ['an azure host (a deployment on the dated route, chat completions)', N.azure],
];

(installed ? describe.each(newKinds) : describe.skip.each(newKinds))(
  `OpenAI Agents SDK (default model settings: Responses) on a model on %s${MISSING}`,
  (_where, model) => {
    beforeEach(() => {
      g.fake.on(model.hostModel, (request) =>
        toolResultsIn(request).length > 0
          ? { kind: 'reply', reply: { text: 'It is 21 degrees in Paris.', usage: model.usage } }
          : {
              kind: 'reply',
              reply: { toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }], usage: model.usage },
            },
      );
    });

    it.each([
      ['whole', false],
      ['streamed', true],
    ])('runs an agent with a function tool to its final output (%s), billed exactly', async (_how, stream) => {
      const calls: string[] = [];
      const { agent, runner } = weatherAgent(model.slug, calls);
      const before = g.fake.requests.length;
      const result = await runner.run(agent, 'Weather in Paris?', { stream });
      if (stream) {
        for await (const _event of result) {
          // drained: the run goes on as its events are read
        }
        await result.completed;
      }
      expect(result.finalOutput).toBe('It is 21 degrees in Paris.');
      expect(calls).toEqual(['Paris']);
      const sent = await expectServedAndBilled(g, model, before);
      expect(sent).toHaveLength(2);
      expect(JSON.stringify(sent[0].body)).toContain('Answer with the tool.');
      expect(toolResultsIn(sent[1])).toEqual(['Paris: 21 degrees, from the tool']);
      expect(sent[1].body.stream).toBe(stream);
      const logged = await g.t.runtime.projections.recentRequests(g.orgId, 2);
      expect(logged.map((e) => e.surface)).toEqual(['responses', 'responses']);
    });
  },
);
