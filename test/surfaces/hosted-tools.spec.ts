import request from 'supertest';
import { OMITTED_TOOLS_HEADER } from '../../src/canonical/hosted-tools';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { LogCapture } from '../support/log-capture';

// Hosted tools (run by a model's provider) that the model's hosts do not run, on each surface: only
// offered, they are left out of the call, and the reply's header and the request's log line name
// them; required, the request is refused in the surface's format, naming the tool.
const M = TEST_MODELS;
let g: TestGateway;
const log = new LogCapture();

beforeAll(async () => {
  g = await startGateway({ logStream: log });
});
afterAll(async () => {
  await g.settled();
  const report = await g.audit();
  expect(report.differences).toEqual([]);
  await g.close();
});

const post = (path: string, body: Record<string, unknown>) => {
  const call = request(g.baseUrl).post(`/api/v1/${path}`).set('Authorization', `Bearer ${g.key}`);
  return (path === 'messages' ? call.set('anthropic-version', '2023-06-01') : call).send(body);
};
const lastSent = () => g.fake.requests[g.fake.requests.length - 1];

const weather = {
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
};

const surfaces: Array<{
  surface: string;
  path: string;
  offered: Record<string, unknown>;
  named: string;
  /** A request requiring a hosted tool (null: the format has no way to). */
  required: Record<string, unknown> | null;
  error: (body: any) => { message: string; type: string };
}> = [
  {
    surface: 'responses',
    path: 'responses',
    offered: {
      input: 'hi',
      tools: [{ type: 'web_search' }, { type: 'function', ...weather }, { type: 'image_generation' }],
      stream: true,
    },
    named: 'web_search, image_generation',
    required: { input: 'hi', tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } },
    error: (body) => body.error,
  },
  {
    surface: 'messages',
    path: 'messages',
    offered: {
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [
        { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
        { name: weather.name, input_schema: weather.parameters },
      ],
    },
    named: 'web_search_20250305',
    required: {
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      tool_choice: { type: 'tool', name: 'web_search' },
    },
    error: (body) => body.error,
  },
  {
    surface: 'chat-completions',
    path: 'chat/completions',
    offered: { messages: [{ role: 'user', content: 'hi' }], web_search_options: {} },
    named: 'web_search',
    required: null,
    error: (body) => body.error,
  },
];

describe.each(surfaces)('hosted tools on the $surface surface', ({ surface, path, offered, named }) => {
  it.each([
    ['a model on an openai host', M.gpt],
    ['a model on an anthropic host', M.claude],
  ])('only offered, on %s: left out of the call, named in the header and the log line', async (_where, model) => {
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'Sunny.' } });
    const res = await post(path, { model: model.slug, ...offered });
    expect(res.status).toBe(200);
    expect(res.headers[OMITTED_TOOLS_HEADER]).toBe(named);
    const sent = JSON.stringify(lastSent().body);
    expect(sent).not.toMatch(/web_search|image_generation/);
    if (surface !== 'chat-completions') expect(sent).toContain('get_weather');
    const line = await log.request(res.headers['x-request-id']);
    expect(line).toMatchObject({ status: 200, surface, omittedTools: named.split(', ') });
  });

  it('nothing hosted offered: no header, no omittedTools in the log line', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hi.' } });
    const res = await post(path, {
      model: M.gpt.slug,
      ...(surface === 'responses' ? { input: 'hi' } : { messages: [{ role: 'user', content: 'hi' }] }),
      ...(surface === 'messages' ? { max_tokens: 50 } : {}),
    });
    expect(res.status).toBe(200);
    expect(res.headers[OMITTED_TOOLS_HEADER]).toBeUndefined();
    expect(await log.request(res.headers['x-request-id'])).not.toHaveProperty('omittedTools');
  });
});

describe.each(surfaces.filter((s) => s.required !== null))(
  'a hosted tool required on the $surface surface',
  ({ path, required, error }) => {
    it('is refused 400 in the surface format, naming the tool; the host is not called', async () => {
      const before = g.fake.requests.length;
      const res = await post(path, { model: M.gpt.slug, ...required });
      expect(res.status).toBe(400);
      expect(error(res.body)).toMatchObject({ type: 'invalid_request_error' });
      expect(error(res.body).message).toMatch(
        /^tool_choice requires the hosted tool "web_search(_20250305)?", which the hosts of this model do not run \(no model of this gateway runs it\)/,
      );
      expect(g.fake.requests.length).toBe(before);
    });
  },
);

describe('a tool type that is not a tool type’s shape (a header injection: it would be named in a reply header)', () => {
  it.each([
    ['responses', { input: 'hi', tools: [{ type: 'web_search\r\nx-evil: 1' }] }, 'tools.0.type'],
    ['responses', { input: 'hi', tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search\nx' } }, 'tool_choice'],
    [
      'responses',
      { input: 'hi', tools: [{ type: 'namespace', name: 'n', tools: [{ type: 'Web_Search', name: 'f' }] }] },
      'tools.0.tools.0.type',
    ],
    [
      'messages',
      {
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'web_search_20250305\r\nx-evil: 1', name: 'web_search' }],
      },
      'tools.0.type',
    ],
  ])('on %s is refused 400 in the surface format before anything is held or called (%#)', async (path, body, field) => {
    const before = g.fake.requests.length;
    const held = (await g.t.runtime.events.readAll(0, 1_000_000)).filter((e) => e.type === 'CreditsReserved').length;
    const res = await post(path, { model: M.gpt.slug, ...body });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error' });
    expect(res.body.error.message).toMatch(new RegExp(`^${field.replace(/\./g, '\\.')} must be `));
    expect(res.headers).not.toHaveProperty('x-evil');
    expect(g.fake.requests.length).toBe(before);
    expect((await g.t.runtime.events.readAll(0, 1_000_000)).filter((e) => e.type === 'CreditsReserved')).toHaveLength(held);
  });
});

describe("the messages format's tools the client runs (bash, text editor, memory): no schema, no translation", () => {
  const clientRun = [
    { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool', max_characters: 10000 },
    { type: 'bash_20250124', name: 'bash' },
    { type: 'memory_20250818', name: 'memory' },
  ];
  const asked = (model: string) => ({
    model,
    max_tokens: 50,
    messages: [{ role: 'user', content: 'Fix the typo in README.md' }],
    tools: [...clientRun, { name: weather.name, description: weather.description, input_schema: weather.parameters }],
  });

  it('go as sent to a host that takes the messages format whole', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'Looking.', usage: { input: 30, output: 2 } } });
    const res = await post('messages', asked(M.claude.slug));
    expect(res.status).toBe(200);
    expect(lastSent().body.tools).toEqual(asked(M.claude.slug).tools);
  });

  it('are refused 400 naming them and the host, for a model whose host would get a translation; the host is not called', async () => {
    const before = g.fake.requests.length;
    const res = await post('messages', asked(M.gpt.slug));
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe('invalid_request_error');
    expect(res.body.error.message).toMatch(
      /^tools of type "text_editor_20250728", "bash_20250124", "memory_20250818" are run by the client as the messages format defines them, and have no translation for host \S+, which is sent this request translated/,
    );
    expect(g.fake.requests.length).toBe(before);
  });

  it('a custom tool still needs its input_schema, with or without its type', async () => {
    for (const tool of [{ name: 'lookup' }, { type: 'custom', name: 'lookup' }]) {
      const res = await post('messages', { ...asked(M.claude.slug), tools: [tool] });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/tools\.0\.input_schema/);
    }
  });
});
