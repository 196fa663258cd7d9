import type { ReceivedRequest } from '../support/fake-upstream';
import { AgentRun, CODEX, codexExec } from '../support/agents';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { expectServedAndBilled, NEW_KIND_MODELS, NewKindModel, toolResultsIn, withNewKinds } from '../support/new-kinds';
import { LogCapture } from '../support/log-capture';
import { tempDir } from '../support/temp';

// Codex CLI as users run it: `codex exec`, unmodified, with a custom model provider set up as its
// docs say (base_url = "{base}/api/v1", wire_api = "responses", env_key), against the gateway's
// Responses route; the fake upstream plays the model behind an openai or an anthropic host.
// Codex is not among the dev dependencies yet: without it, these tests are skipped, saying so.
// Its configuration is the default one: the hosted web search it offers is left out, and the
// request's log line says so.
const M = TEST_MODELS;
const REPLY = 'Hello from the model, through the gateway.';
const MISSING = CODEX === null ? ' [skipped: @openai/codex is not installed: npm install --save-dev @openai/codex]' : '';

let g: TestGateway;
const tmp = tempDir('codex');
const log = new LogCapture();

beforeAll(async () => {
  if (CODEX === null) return;
  g = await startGateway({ ...withNewKinds, logStream: log });
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
      g.fake.on(model.hostModel, (request) =>
        hasToolResult(request)
          ? { kind: 'reply', reply: { text: 'The command printed 42.' } }
          : {
              kind: 'reply',
              reply: {
                toolCalls: [
                  { id: 'call_shell_1', name: 'exec_command', arguments: JSON.stringify({ cmd: 'echo $((6 * 7))-from-shell' }) },
                ],
              },
            },
      );
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

const newKinds: Array<[string, NewKindModel]> = [
  ['an openai-responses host', NEW_KIND_MODELS.responses],
  ['an azure host (a deployment on the v1 route, the Responses API)', NEW_KIND_MODELS.azureResponses],
];

(CODEX === null ? describe.skip.each(newKinds) : describe.each(newKinds))(
  `Codex CLI (codex exec, its default configuration) on a model on %s${MISSING}`,
  (_where, model) => {
    it('completes a tool-using turn: the model calls exec_command, Codex runs it and sends the output back; billed exactly', async () => {
      g.fake.on(model.hostModel, (request) =>
        toolResultsIn(request).length > 0
          ? { kind: 'reply', reply: { text: 'The command printed 42.', usage: model.usage } }
          : {
              kind: 'reply',
              reply: {
                toolCalls: [
                  { id: 'call_shell_1', name: 'exec_command', arguments: JSON.stringify({ cmd: 'echo $((6 * 7))-from-shell' }) },
                ],
                usage: model.usage,
              },
            },
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
