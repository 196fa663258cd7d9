import type { ReceivedRequest } from '../support/fake-upstream';
import { claudeCode, opencode, opencodeText } from '../support/agents';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import {
  expectServedAndBilled,
  NEW_KIND_MODELS,
  NewKindModel,
  toolResultsIn,
  useAwsTestCredentials,
  withNewKinds,
} from '../support/new-kinds';
import { startRecordingProxy } from '../support/recording-proxy';
import { tempDir } from '../support/temp';

// Coding agents as users run them: the CLIs unmodified, set up as their docs say for a custom
// endpoint, against the gateway; the fake upstream plays the model, behind hosts of every kind.
const M = TEST_MODELS;
const N = NEW_KIND_MODELS;
const REPLY = 'Hello from the model, through the gateway.';
let g: TestGateway;
let restoreAws: () => void;
const tmp = tempDir('agents');

beforeAll(async () => {
  // The bedrock hosts sign with the credentials AWS's chain finds in the gateway's environment.
  restoreAws = useAwsTestCredentials();
  g = await startGateway(withNewKinds);
});
afterAll(async () => {
  await g.settled();
  const report = await g.audit();
  expect(report.differences).toEqual([]);
  await g.close();
  restoreAws();
  tmp.cleanup();
});

/** Everything a request carried as text (system, messages, tool results), to find what reached the upstream. */
const textOf = (request: ReceivedRequest): string => JSON.stringify(request.body);

/** Whether a request carries a tool's result, in either wire format. */
const hasToolResult = (request: ReceivedRequest): boolean =>
  ((request.body as { messages?: Array<{ role: string; content?: unknown }> }).messages ?? []).some(
    (m) => m.role === 'tool' || (Array.isArray(m.content) && m.content.some((b: { type?: string }) => b.type === 'tool_result')),
  );

const hosts: Array<[string, { slug: string; hostModel: string }, string]> = [
  ['a model on an anthropic host', M.claude, '/v1/messages'],
  ['a model on an openai host', M.gpt, '/v1/chat/completions'],
];

describe.each(hosts)('Claude Code (print mode, ANTHROPIC_BASE_URL={base}/api) on %s', (_where, model, upstreamPath) => {
  it('completes a plain prompt: its system prompts reach the host and its 32,000-token cap is lowered to the model limit', async () => {
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: REPLY } });
    const before = g.fake.requests.length;
    const run = await claudeCode(tmp, g, model.slug, 'say hi');
    expect(run).toMatchObject({ code: 0 });
    expect(JSON.parse(run.stdout)).toMatchObject({ type: 'result', is_error: false, result: REPLY });

    const sent = g.fake.requests.slice(before).filter((r) => r.path.startsWith(upstreamPath));
    expect(sent.length).toBeGreaterThan(0);
    const body = sent[0].body as { max_tokens: number };
    // Claude Code asks for 32,000 output tokens; the test models allow 1,000.
    expect(body.max_tokens).toBe(1000);
    // Its top-level system prompt and the system entry it puts inside `messages` both arrive.
    expect(textOf(sent[0])).toContain('You are a Claude agent');
    expect(textOf(sent[0])).toContain('# Environment');
  });

  it('completes a tool-using turn: the model calls Bash, Claude Code runs it and sends the result back', async () => {
    g.fake.on(model.hostModel, (request) =>
      hasToolResult(request)
        ? { kind: 'reply', reply: { text: 'The file is there.' } }
        : {
            kind: 'reply',
            reply: {
              toolCalls: [
                {
                  id: 'toolu_01',
                  name: 'Bash',
                  arguments: JSON.stringify({ command: 'echo $((6 * 7))-from-bash', description: 'make the file' }),
                },
              ],
            },
          },
    );
    const before = g.fake.requests.length;
    const run = await claudeCode(tmp, g, model.slug, 'Make the marker file with the shell', ['--allowedTools', 'Bash']);
    expect(run).toMatchObject({ code: 0 });
    expect(JSON.parse(run.stdout)).toMatchObject({ is_error: false, result: 'The file is there.' });
    const sent = g.fake.requests.slice(before).filter((r) => r.path.startsWith(upstreamPath));
    const withResult = sent.find(hasToolResult);
    expect(withResult).toBeDefined();
    // The command's output, which only running it produces (the arguments hold `$((6 * 7))`, not 42).
    expect(textOf(withResult!)).toContain('42-from-bash');
  });
});

describe('Claude Code on a model on an anthropic host: what it sends arrives unchanged', () => {
  it('cache_control, thinking, its system messages and betas reach the host as sent; only the model and the cap differ', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: REPLY } });
    const proxy = await startRecordingProxy(g.baseUrl);
    const before = g.fake.requests.length;
    try {
      const run = await claudeCode(tmp, { baseUrl: proxy.url, key: g.key }, M.claude.slug, 'say hi');
      expect(run).toMatchObject({ code: 0 });
    } finally {
      await proxy.close();
    }
    const fromClaude = proxy.sent.filter(
      (r) => r.method === 'POST' && new URL(r.url, 'http://x').pathname === '/api/v1/messages',
    );
    const atHost = g.fake.requests.slice(before).filter((r) => r.path === '/v1/messages');
    expect(fromClaude.length).toBeGreaterThan(0);
    expect(atHost).toHaveLength(fromClaude.length);
    fromClaude.forEach((sent, i) => {
      const body = JSON.parse(sent.raw) as Record<string, any>;
      // What Claude Code sends that a gateway must not lose.
      expect(sent.raw).toContain('"cache_control"');
      expect(body.thinking).toBeDefined();
      expect(body.messages.some((m: { role: string }) => m.role === 'system') || body.system !== undefined).toBe(true);
      // The cap (32,000) lowered to the test model's 1,000, with a thinking budget under it if one was set.
      const thinking =
        typeof body.thinking?.budget_tokens === 'number' && body.thinking.budget_tokens >= 1000
          ? { ...body.thinking, budget_tokens: 999 }
          : body.thinking;
      expect(atHost[i].body).toEqual({
        ...body,
        model: M.claude.hostModel,
        max_tokens: Math.min(body.max_tokens, 1000),
        thinking,
      });
      expect(atHost[i].headers['anthropic-beta']).toBe(sent.headers['anthropic-beta']);
    });
  });
});

describe.each(hosts)('opencode (openai-compatible provider, no model limits) on %s', (_where, model, upstreamPath) => {
  it('completes `opencode run`, its 32,000-token cap lowered to the model limit', async () => {
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: REPLY } });
    const before = g.fake.requests.length;
    const run = await opencode(tmp, g, model.slug, 'say hi');
    expect(run).toMatchObject({ code: 0 });
    expect(opencodeText(run)).toContain(REPLY);
    const sent = g.fake.requests.slice(before).filter((r) => r.path.startsWith(upstreamPath));
    expect(sent.length).toBeGreaterThan(0);
    for (const request of sent) expect((request.body as { max_tokens: number }).max_tokens).toBe(1000);
  });
});

/** A host that calls `name` with `args` until the request carries a tool's result, then answers `final`; every call reports the model's usage. */
function toolRoundTrip(model: NewKindModel, call: { id: string; name: string; arguments: object }, final: string) {
  g.fake.on(model.hostModel, (request) =>
    toolResultsIn(request).length > 0
      ? { kind: 'reply', reply: { text: final, usage: model.usage } }
      : {
          kind: 'reply',
          reply: {
            toolCalls: [{ id: call.id, name: call.name, arguments: JSON.stringify(call.arguments) }],
            usage: model.usage,
          },
        },
  );
}

describe.each([
  ['bedrock (InvokeModel: its messages body whole, SigV4-signed)', N.bedrockInvoke],
  ['bedrock (Converse, SigV4-signed)', N.bedrockConverse],
])('Claude Code on a model on a %s host', (_where, model) => {
  it('completes a tool-using turn: the model calls Bash, Claude Code runs it and sends the result back; billed exactly', async () => {
    toolRoundTrip(
      model,
      { id: 'toolu_01', name: 'Bash', arguments: { command: 'echo $((6 * 7))-from-bash', description: 'make the file' } },
      'The file is there.',
    );
    const before = g.fake.requests.length;
    const run = await claudeCode(tmp, g, model.slug, 'Make the marker file with the shell', ['--allowedTools', 'Bash']);
    expect(run).toMatchObject({ code: 0 });
    expect(JSON.parse(run.stdout)).toMatchObject({ is_error: false, result: 'The file is there.' });
    const sent = await expectServedAndBilled(g, model, before);
    // The command's output, which only running it produces (the arguments hold `$((6 * 7))`, not 42).
    expect(sent.flatMap(toolResultsIn).some((result) => result.includes('42-from-bash'))).toBe(true);
  });
});

describe('Claude Code on a model on a bedrock host with InvokeModel: what it sends arrives unchanged', () => {
  it('cache_control, thinking and its betas reach the host in the body; only the model, the stream flag and the cap differ', async () => {
    const model = N.bedrockInvoke;
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: REPLY, usage: model.usage } });
    const proxy = await startRecordingProxy(g.baseUrl);
    const before = g.fake.requests.length;
    try {
      const run = await claudeCode(tmp, { baseUrl: proxy.url, key: g.key }, model.slug, 'say hi');
      expect(run).toMatchObject({ code: 0 });
      expect(JSON.parse(run.stdout)).toMatchObject({ is_error: false, result: REPLY });
    } finally {
      await proxy.close();
    }
    const fromClaude = proxy.sent.filter(
      (r) => r.method === 'POST' && new URL(r.url, 'http://x').pathname === '/api/v1/messages',
    );
    const atHost = await expectServedAndBilled(g, model, before);
    expect(fromClaude.length).toBeGreaterThan(0);
    expect(atHost).toHaveLength(fromClaude.length);
    fromClaude.forEach((sent, i) => {
      const { model: _model, stream, ...body } = JSON.parse(sent.raw) as Record<string, any>;
      expect(sent.raw).toContain('"cache_control"');
      expect(body.thinking).toBeDefined();
      // Streamed, it went to the streaming operation (Bedrock names the stream there, not in the body).
      expect(atHost[i].path.endsWith(stream ? '/invoke-with-response-stream' : '/invoke')).toBe(true);
      const thinking =
        typeof body.thinking?.budget_tokens === 'number' && body.thinking.budget_tokens >= 1000
          ? { ...body.thinking, budget_tokens: 999 }
          : body.thinking;
      const betas = String(sent.headers['anthropic-beta'] ?? '')
        .split(',')
        .map((b) => b.trim())
        .filter(Boolean);
      expect(betas.length).toBeGreaterThan(0);
      expect(atHost[i].body).toEqual({
        ...body,
        anthropic_version: 'bedrock-2023-05-31',
        anthropic_beta: betas,
        max_tokens: Math.min(body.max_tokens, 1000),
        thinking,
      });
    });
  });
});

describe('opencode (openai-compatible provider) on a model on a gemini host', () => {
  it('completes a tool-using `opencode run`: the model calls bash, opencode runs it and sends the result back; billed exactly', async () => {
    const model = N.gemini;
    toolRoundTrip(
      model,
      { id: 'call_bash_1', name: 'bash', arguments: { command: 'echo $((6 * 7))-from-bash', description: 'Work it out' } },
      'The shell says 42.',
    );
    const before = g.fake.requests.length;
    const run = await opencode(tmp, g, model.slug, 'Work out six times seven with the shell');
    expect(run).toMatchObject({ code: 0 });
    expect(opencodeText(run)).toContain('The shell says 42.');
    const sent = await expectServedAndBilled(g, model, before);
    expect(sent.flatMap(toolResultsIn).some((result) => result.includes('42-from-bash'))).toBe(true);
    // Its cap, lowered to the model's limit, in Gemini's generation config.
    for (const request of sent) expect(request.body.generationConfig.maxOutputTokens).toBe(1000);
  });
});
