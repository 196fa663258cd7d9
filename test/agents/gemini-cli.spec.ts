import type { ReceivedRequest } from '../support/fake-upstream';
import { geminiCli } from '../support/agents';
import { auditThenClose, startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { startRecordingProxy } from '../support/recording-proxy';
import { tempDir } from '../support/temp';

// Gemini CLI as users run it against a custom endpoint, unmodified, on catalogue models whose hosts
// speak other formats (the Gemini surface translates); the fake upstream plays the model.
const M = TEST_MODELS;
const REPLY = 'Hello from the model, through the gateway.';
let g: TestGateway;
const tmp = tempDir('gemini-cli');

beforeAll(async () => {
  g = await startGateway();
});
afterAll(async () => {
  await g.settled();
  await auditThenClose(g);
  tmp.cleanup();
});

const textOf = (request: ReceivedRequest): string => JSON.stringify(request.body);

/** Whether a request carries a tool's result, in either wire format. */
const hasToolResult = (request: ReceivedRequest): boolean =>
  ((request.body as { messages?: Array<{ role: string; content?: unknown }> }).messages ?? []).some(
    (m) => m.role === 'tool' || (Array.isArray(m.content) && m.content.some((b: { type?: string }) => b.type === 'tool_result')),
  );

const hosts: Array<[string, { slug: string; hostModel: string }, string]> = [
  ['a model on an openai host', M.gpt, '/v1/chat/completions'],
  ['a model on an anthropic host', M.claude, '/v1/messages'],
];

describe.each(hosts)('Gemini CLI (-p, GOOGLE_GEMINI_BASE_URL={base}/api) on %s', (_where, model, upstreamPath) => {
  it('completes a plain prompt: every call it makes is served, its system instruction and tools reach the host', async () => {
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: REPLY } });
    const proxy = await startRecordingProxy(g.baseUrl);
    const before = g.fake.requests.length;
    let run;
    try {
      run = await geminiCli(tmp, { baseUrl: proxy.url, key: g.key }, model.slug, 'say hi');
    } finally {
      await proxy.close();
    }
    expect(run).toMatchObject({ code: 0 });
    expect(JSON.parse(run.stdout)).toMatchObject({ response: REPLY });
    // It names the model by its slug, unencoded, and streams.
    const calls = proxy.sent.filter((r) => r.method === 'POST');
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) expect(call.url).toBe(`/api/v1beta/models/${model.slug}:streamGenerateContent?alt=sse`);
    for (const call of calls) expect(call.headers['x-goog-api-key']).toBe(g.key);
    // Each call reached the host: none was refused.
    const sent = g.fake.requests.slice(before).filter((r) => r.path.startsWith(upstreamPath));
    expect(sent).toHaveLength(calls.length);
    const main = sent[sent.length - 1];
    expect(textOf(main)).toContain('say hi');
    // Its system instruction (it introduces itself as an agent) and its tools (the shell among them) arrive.
    expect(textOf(main)).toContain('Gemini CLI');
    expect(textOf(main)).toContain('run_shell_command');
  }, 90_000);

  it('completes a tool-using turn: the model calls the shell, Gemini CLI runs it and sends the result back', async () => {
    g.fake.on(model.hostModel, (request) =>
      hasToolResult(request)
        ? { kind: 'reply', reply: { text: 'The shell said its piece.' } }
        : {
            kind: 'reply',
            reply: {
              toolCalls: [
                {
                  id: 'call_shell_1',
                  name: 'run_shell_command',
                  arguments: JSON.stringify({
                    command: "echo marker-from-shell | tr 'a-z' 'A-Z'",
                    description: 'print a marker',
                  }),
                },
              ],
            },
          },
    );
    const before = g.fake.requests.length;
    const run = await geminiCli(tmp, g, model.slug, 'Print the marker with the shell', ['--approval-mode', 'yolo']);
    expect(run).toMatchObject({ code: 0 });
    expect(JSON.parse(run.stdout)).toMatchObject({ response: 'The shell said its piece.' });
    const withResult = g.fake.requests
      .slice(before)
      .filter((r) => r.path.startsWith(upstreamPath))
      .find(hasToolResult);
    expect(withResult).toBeDefined();
    // The command's output, which only running it produces (the arguments hold it in lower case), answering the call by its id.
    expect(textOf(withResult!)).toContain('MARKER-FROM-SHELL');
    expect(textOf(withResult!)).toContain('call_shell_1');
  }, 90_000);
});
