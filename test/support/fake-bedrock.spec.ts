// Verifies the fake's Bedrock Runtime itself with plain fetch: it refuses what AWS refuses and
// answers in Bedrock's shapes (see fakes/bedrock.ts).
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { signingAuthorizer } from '../../src/hosts/bedrock/bedrock.signing';
import { FakeUpstream, startFakeUpstream } from './fake-upstream';
import { BEDROCK_TEST_API_KEY, BEDROCK_TEST_CREDENTIALS } from './fakes/bedrock';

let fake: FakeUpstream;
beforeEach(async () => {
  fake = await startFakeUpstream();
});
afterEach(() => fake.close());

const signer = signingAuthorizer('us-west-2', async () => BEDROCK_TEST_CREDENTIALS);

/** POSTs `body` to a Bedrock path, signed over `signedBody` (the body itself unless a test tampers). */
async function post(path: string, body: object, options: { sign?: boolean; signedBody?: string; bearer?: string } = {}) {
  const url = new URL(fake.url + path);
  const text = JSON.stringify(body);
  let headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  else if (options.sign !== false)
    headers = { ...headers, ...(await signer.headers({ method: 'POST', url, headers, body: options.signedBody ?? text })) };
  return fetch(url, { method: 'POST', headers, body: text });
}

const CONVERSE = '/model/amazon.nova-pro-v1%3A0/converse';
const BODY = { messages: [{ role: 'user', content: [{ text: 'Hi' }] }] };

describe('the fake Bedrock Runtime', () => {
  it('refuses a call without a signature, with a tampered body, or with a wrong API key, as AWS does', async () => {
    const unsigned = await post(CONVERSE, BODY, { sign: false });
    expect(unsigned.status).toBe(403);
    expect(unsigned.headers.get('x-amzn-errortype')).toMatch(/^MissingAuthenticationTokenException/);
    expect(await unsigned.json()).toEqual({ message: 'Missing Authentication Token' });
    const tampered = await post(CONVERSE, BODY, { signedBody: '{"messages":[]}' });
    expect(tampered.status).toBe(403);
    expect(tampered.headers.get('x-amzn-errortype')).toMatch(/^InvalidSignatureException/);
    expect(((await tampered.json()) as { message: string }).message).toMatch(
      /^The request signature we calculated does not match/,
    );
    expect((await post(CONVERSE, BODY, { bearer: 'not-the-key' })).status).toBe(403);
  });

  it('answers a signed Converse call (or one with the API key) with the model’s reply and every usage field', async () => {
    fake.on('amazon.nova-pro-v1:0', {
      kind: 'reply',
      reply: { text: 'Hello', usage: { input: 10, cacheRead: 20, cacheWrite: 30, cacheWrite1h: 40, output: 5 } },
    });
    for (const res of [await post(CONVERSE, BODY), await post(CONVERSE, BODY, { bearer: BEDROCK_TEST_API_KEY })]) {
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        output: { message: { role: 'assistant', content: [{ text: 'Hello' }] } },
        stopReason: 'end_turn',
        usage: {
          inputTokens: 10,
          outputTokens: 5,
          totalTokens: 105,
          cacheReadInputTokens: 20,
          cacheWriteInputTokens: 70,
          cacheDetails: [
            { ttl: '1h', inputTokens: 40 },
            { ttl: '5m', inputTokens: 30 },
          ],
        },
        metrics: { latencyMs: expect.any(Number) },
      });
    }
    expect((await fake.received('amazon.nova-pro-v1:0')).model).toBe('amazon.nova-pro-v1:0');
  });

  it('streams ConverseStream as AWS’s event stream, each message with its event type and JSON payload', async () => {
    const res = await post('/model/amazon.nova-pro-v1%3A0/converse-stream', BODY);
    expect(res.headers.get('content-type')).toBe('application/vnd.amazon.eventstream');
    const bytes = new Uint8Array(await res.arrayBuffer());
    const codec = new EventStreamCodec(toUtf8, fromUtf8);
    const types: string[] = [];
    for (let at = 0; at < bytes.length;) {
      const length = new DataView(bytes.buffer, at, 4).getUint32(0);
      const { headers, body } = codec.decode(bytes.subarray(at, at + length));
      expect(headers[':message-type'].value).toBe('event');
      expect(() => JSON.parse(toUtf8(body))).not.toThrow();
      types.push(headers[':event-type'].value as string);
      at += length;
    }
    expect(types[0]).toBe('messageStart');
    expect(types.slice(-3)).toEqual(['contentBlockStop', 'messageStop', 'metadata']);
    expect(new Set(types.slice(1, -3))).toEqual(new Set(['contentBlockDelta']));
  });

  it('refuses an InvokeModel body without Bedrock’s Anthropic version, or naming the model or the stream', async () => {
    const invoke = '/model/anthropic.claude-x-v1%3A0/invoke';
    const messages = [{ role: 'user', content: 'Hi' }];
    expect((await post(invoke, { max_tokens: 10, messages })).status).toBe(400);
    const named = await post(invoke, { anthropic_version: 'bedrock-2023-05-31', model: 'x', max_tokens: 10, messages });
    expect(named.status).toBe(400);
    expect(((await named.json()) as { message: string }).message).toMatch(/extraneous key \[model\]/);
    const ok = await post(invoke, { anthropic_version: 'bedrock-2023-05-31', max_tokens: 10, messages });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text' }] });
  });

  it('refuses a Converse tool name outside [a-zA-Z0-9_-]+ or over 64, as its input validation does', async () => {
    const named = (name: string) => ({
      ...BODY,
      toolConfig: { tools: [{ toolSpec: { name, inputSchema: { json: { type: 'object' } } } }] },
    });
    for (const [name, message] of [
      [
        'files.read',
        /at 'toolConfig\.tools\.1\.member\.toolSpec\.name' failed to satisfy constraint: Member must satisfy regular expression pattern: \[a-zA-Z0-9_-\]\+/,
      ],
      ['x'.repeat(65), /Member must have length less than or equal to 64/],
    ] as const) {
      const refused = await post(CONVERSE, named(name));
      expect(refused.status).toBe(400);
      expect(refused.headers.get('x-amzn-errortype')).toMatch(/^ValidationException:/);
      expect(((await refused.json()) as { message: string }).message).toMatch(message);
    }
    expect((await post(CONVERSE, named('read_file-2'))).status).toBe(200);
  });

  it('refuses what Claude refuses beside thinking, through Converse and InvokeModel, as Bedrock passes on a model’s refusal', async () => {
    const converse = '/model/us.anthropic.claude-x-v1%3A0/converse';
    const thinking = { type: 'enabled', budget_tokens: 2048 };
    const toolConfig = { tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }] };
    const loop = [
      { role: 'user', content: [{ text: 'Hi' }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'f', input: {} } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 't1', content: [{ text: 'done' }] } }] },
    ];
    const refusals: Array<[object, RegExp]> = [
      [{ messages: loop, toolConfig }, /Expected `thinking` or `redacted_thinking`, but found `tool_use`/],
      [{ ...BODY, inferenceConfig: { temperature: 0.2 } }, /`temperature` may only be set to 1 when thinking is enabled/],
      [
        { ...BODY, toolConfig: { ...toolConfig, toolChoice: { any: {} } } },
        /Thinking may not be enabled when tool_choice forces tool use/,
      ],
    ];
    for (const [body, message] of refusals) {
      const refused = await post(converse, { ...body, additionalModelRequestFields: { thinking } });
      expect(refused.status).toBe(400);
      expect(refused.headers.get('x-amzn-errortype')).toMatch(/^ValidationException:/);
      expect(((await refused.json()) as { message: string }).message).toMatch(message);
      expect((await post(converse, body)).status).toBe(200);
    }
    const invoke = '/model/anthropic.claude-x-v1%3A0/invoke';
    const top = await post(invoke, {
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 4000,
      thinking,
      top_k: 5,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(top.status).toBe(400);
    expect(((await top.json()) as { message: string }).message).toMatch(/`top_k` must be unset when thinking is enabled/);
  });
});
