import { join } from 'node:path';
import { CanonicalEvent, CanonicalRequest, HostError } from '../../src/canonical/canonical';
import { Catalogue, CatalogueError } from '../../src/catalogue/catalogue';
import { anthropicHost } from '../../src/hosts/anthropic/anthropic.host';
import { geminiHost } from '../../src/hosts/gemini/gemini.host';
import type { SseMessage } from '../../src/hosts/host-kind';
import { publisherOf, vertexHost } from '../../src/hosts/vertex/vertex.host';
import { usage } from '../support/usage';

const request = (overrides: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  system: [],
  messages: [{ role: 'user', content: 'Hi' }],
  tools: [],
  stop: [],
  stream: true,
  ...overrides,
});

const SETTINGS = { project: 'acme-prod', location: 'us-east5', credentialsFile: '', publisher: 'auto' };
const CLAUDE = 'claude-sonnet-4-5@20250929';

const build = (overrides: Partial<CanonicalRequest> = {}, model = CLAUDE) =>
  vertexHost.buildRequest(request(overrides), model, null, SETTINGS);

describe('vertexHost: where a host is', () => {
  it('a location’s own endpoint, or the global one, for the project', () => {
    expect(vertexHost.defaultBaseUrl!(SETTINGS)).toBe(
      'https://us-east5-aiplatform.googleapis.com/v1/projects/acme-prod/locations/us-east5',
    );
    expect(vertexHost.defaultBaseUrl!({ ...SETTINGS, location: 'global' })).toBe(
      'https://aiplatform.googleapis.com/v1/projects/acme-prod/locations/global',
    );
  });

  const file = (host: Record<string, unknown>) => ({
    hosts: [{ id: 'vertex', kind: 'vertex', ...host }],
    models: [
      {
        slug: 'anthropic/claude',
        id: '0a4f2c9e-6b1d-4e8a-9f3c-2d7e5b1a8c60',
        name: 'Claude',
        contextLength: 200_000,
        maxOutputTokens: 64_000,
        hosts: [{ host: 'vertex', model: CLAUDE, pricing: { input: '3', output: '15', cacheRead: '0.30' } }],
      },
    ],
  });

  it('a catalogue entry gives its project and location (from the environment too), and its base URL follows from them', () => {
    const catalogue = Catalogue.parse(file({ project: '${GCP_PROJECT}', location: 'global' }), { GCP_PROJECT: 'acme' });
    expect(catalogue.hosts[0]).toMatchObject({
      kind: 'vertex',
      baseUrl: 'https://aiplatform.googleapis.com/v1/projects/acme/locations/global',
      settings: { project: 'acme', location: 'global', credentialsFile: '', publisher: 'auto' },
      apiKey: null,
      usable: true,
    });
    expect(catalogue.servable()).toHaveLength(1);
  });

  it('an entry whose project comes from a variable left unset cannot serve; one that gives none is refused', () => {
    const unset = Catalogue.parse(file({ project: '${GCP_PROJECT}', location: 'us-east5' }), {});
    expect(unset.hosts[0].usable).toBe(false);
    expect(unset.servable()).toEqual([]);
    expect(() => Catalogue.parse(file({ location: 'us-east5' }), {})).toThrow(CatalogueError);
    expect(() => Catalogue.parse(file({ location: 'us-east5' }), {})).toThrow(/"project" must be a non-empty string/);
  });
});

describe('the shipped catalogue’s vertex host', () => {
  const shipped = (env: Record<string, string>) => Catalogue.load(join(__dirname, '../../catalogue/default.json'), env);

  it('is Vertex AI’s global endpoint for GOOGLE_CLOUD_PROJECT (or GOOGLE_CLOUD_LOCATION’s), serving Claude Sonnet 4.5 and Gemini 2.5 Pro at their list prices', () => {
    const catalogue = shipped({ GOOGLE_CLOUD_PROJECT: 'acme' });
    expect(catalogue.hosts.find((h) => h.id === 'vertex')).toMatchObject({
      baseUrl: 'https://aiplatform.googleapis.com/v1/projects/acme/locations/global',
      usable: true,
    });
    const sonnet = catalogue.find('anthropic/claude-sonnet-4.5')!;
    expect(sonnet.hosts.find((h) => h.host.id === 'vertex')).toMatchObject({
      model: 'claude-sonnet-4-5@20250929',
      prices: { input: 3e9, output: 15e9, cacheRead: 0.3e9, cacheWrite: 3.75e9, cacheWrite1h: 6e9 },
    });
    const pro = catalogue.find('google/gemini-2.5-pro')!;
    expect(pro.hosts.find((h) => h.host.id === 'vertex')).toMatchObject({
      model: 'gemini-2.5-pro',
      prices: { input: 1.25e9, output: 10e9, cacheRead: 0.125e9 },
    });
    expect(catalogue.cachePricesAssumed()).toEqual([]);
    expect(
      shipped({ GOOGLE_CLOUD_PROJECT: 'acme', GOOGLE_CLOUD_LOCATION: 'us-east5' }).hosts.find((h) => h.id === 'vertex')!.baseUrl,
    ).toBe('https://us-east5-aiplatform.googleapis.com/v1/projects/acme/locations/us-east5');
  });

  it('without a project it cannot serve, and Claude Sonnet 4.5 is served by Anthropic alone', () => {
    const catalogue = shipped({ ANTHROPIC_API_KEY: 'sk-ant-x' });
    expect(catalogue.hosts.find((h) => h.id === 'vertex')!.usable).toBe(false);
    expect(catalogue.servable().map((m) => m.slug)).toContain('anthropic/claude-sonnet-4.5');
  });
});

describe('vertexHost.buildRequest, for Claude (the Anthropic publisher)', () => {
  it('knows Claude by its model name, unless the host names its publisher', () => {
    expect(publisherOf(CLAUDE, SETTINGS)).toBe('anthropic');
    expect(publisherOf('claude-opus-4-1@20250805', SETTINGS)).toBe('anthropic');
    expect(publisherOf('gemini-2.5-pro', SETTINGS)).toBe('google');
    expect(publisherOf('my-tuned-model', { ...SETTINGS, publisher: 'anthropic' })).toBe('anthropic');
    const named = vertexHost.buildRequest(request(), 'my-tuned-model', null, { ...SETTINGS, publisher: 'anthropic' });
    expect(named.path).toBe('/publishers/anthropic/models/my-tuned-model:streamRawPredict');
  });

  it('a host naming another publisher is refused by the catalogue', () => {
    const entry = { id: 'v', kind: 'vertex', project: 'p', location: 'global', publisher: 'meta' };
    expect(() => Catalogue.parse({ hosts: [entry], models: [] }, {})).toThrow(
      /"publisher" must be "auto" or "anthropic" or "google"/,
    );
  });

  it('streams with streamRawPredict, and takes the whole reply with rawPredict, the model in the path with its @', () => {
    expect(build({ stream: true }).path).toBe('/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict');
    expect(build({ stream: false }).path).toBe('/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
  });

  it('sends the anthropic kind’s Messages body, with Vertex’s anthropic_version in place of the model', () => {
    const overrides: Partial<CanonicalRequest> = {
      system: ['Be brief.'],
      maxTokens: 2000,
      reasoning: { budgetTokens: 1024 },
      tools: [{ name: 'get_weather', parameters: { type: 'object' } }],
      toolChoice: 'required',
      stop: ['END'],
      temperature: 0.5,
    };
    const { model, ...messages } = anthropicHost.buildRequest(request(overrides), CLAUDE, 'k').body as Record<string, unknown>;
    expect(model).toBe(CLAUDE);
    expect(build(overrides).body).toEqual({ anthropic_version: 'vertex-2023-10-16', ...messages });
    expect(build(overrides).body).not.toHaveProperty('model');
  });

  it('sends no key and no version header (the token is the authorizer’s; the version is in the body), and the client’s betas', () => {
    expect(build().headers).toEqual({ 'content-type': 'application/json' });
    expect(build({ betas: ['context-1m-2025-08-07', 'b-2026-01-01'] }).headers).toEqual({
      'content-type': 'application/json',
      'anthropic-beta': 'context-1m-2025-08-07,b-2026-01-01',
    });
  });

  it('passes a Messages client’s body whole but for its model, with the version, and the cap lowered with its thinking budget', () => {
    const original = {
      model: 'vendor/claude',
      max_tokens: 100_000,
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 80_000 },
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral', ttl: '1h' } }] }],
      some_future_field: { kept: true },
    };
    const upstream = build({ maxTokens: 64_000, original: { format: 'messages', body: original } });
    expect(upstream.passThrough).toBe(true);
    expect(upstream.body).toEqual({
      anthropic_version: 'vertex-2023-10-16',
      max_tokens: 64_000,
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 63_999 },
      messages: original.messages,
      some_future_field: { kept: true },
    });
  });
});

describe('vertexHost.buildRequest, for Gemini (Google’s publisher)', () => {
  const GEMINI = 'gemini-2.5-pro';

  it('streams with streamGenerateContent over server-sent events, and takes the whole reply with generateContent', () => {
    expect(build({ stream: true }, GEMINI).path).toBe('/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
    expect(build({ stream: false }, GEMINI).path).toBe('/publishers/google/models/gemini-2.5-pro:generateContent');
  });

  it('sends the gemini kind’s body, with no key (the token is the authorizer’s)', () => {
    const overrides: Partial<CanonicalRequest> = {
      system: ['Be brief.'],
      maxTokens: 2000,
      reasoning: { effort: 'low' },
      tools: [{ name: 'get_weather', parameters: { type: 'object' } }],
      toolChoice: 'required',
      messages: [{ role: 'user', content: 'Hi', images: [{ url: 'data:image/png;base64,iVBORw0KGgo=' }] }],
    };
    expect(build(overrides, GEMINI).body).toEqual(geminiHost.buildRequest(request(overrides), GEMINI, 'k').body);
    expect(build(overrides, GEMINI).headers).toEqual({ 'content-type': 'application/json' });
    // Vertex AI requires each content's role.
    expect((build(overrides, GEMINI).body as { contents: Array<{ role: string }> }).contents.map((c) => c.role)).toEqual([
      'user',
    ]);
  });

  it('asks for no server-side tool invocations beside a search, a field Vertex AI does not have; the gemini kind does', () => {
    const overrides: Partial<CanonicalRequest> = {
      tools: [{ name: 'get_weather', parameters: { type: 'object' } }],
      toolChoice: 'auto',
      carriedTools: { classes: ['webSearch'], maxUses: 5 },
    };
    const body = build(overrides, 'gemini-3-flash-preview').body as Record<string, unknown>;
    expect(body.tools).toEqual([
      { functionDeclarations: [{ name: 'get_weather', parametersJsonSchema: { type: 'object' } }] },
      { googleSearch: {} },
    ]);
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
    expect((geminiHost.buildRequest(request(overrides), 'gemini-3-flash-preview', 'k').body as any).toolConfig).toEqual({
      functionCallingConfig: { mode: 'AUTO' },
      includeServerSideToolInvocations: true,
    });
  });

  it('names the thinking a Gemini model could not turn off, as the gemini kind does', () => {
    const none = request({ reasoning: { effort: 'none' } });
    expect(vertexHost.omittedReasoning!(none, GEMINI, SETTINGS)).toBe('thinking_required');
    expect(vertexHost.omittedReasoning!(none, 'gemini-2.5-flash', SETTINGS)).toBeNull();
  });

  it('a host naming Google’s publisher serves any model name with it', () => {
    const named = vertexHost.buildRequest(request(), 'claude-lookalike', null, { ...SETTINGS, publisher: 'google' });
    expect(named.path).toBe('/publishers/google/models/claude-lookalike:streamGenerateContent?alt=sse');
  });
});

describe('vertexHost.countTokensRequest', () => {
  it('counts Claude’s tokens on the count-tokens model, the host model named in the body, with the version and betas', () => {
    const body = { model: 'vendor/claude', messages: [{ role: 'user', content: 'Hi' }] };
    expect(vertexHost.countTokensRequest!(body, CLAUDE, null, ['token-counting-2024-11-01'], SETTINGS)).toEqual({
      path: '/publishers/anthropic/models/count-tokens:rawPredict',
      headers: { 'content-type': 'application/json', 'anthropic-beta': 'token-counting-2024-11-01' },
      body: { ...body, model: CLAUDE, anthropic_version: 'vertex-2023-10-16' },
    });
  });

  it('has no count for a model of Google’s publisher (its count is of another wire)', () => {
    expect(vertexHost.countTokensRequest!({ model: 'x', messages: [] }, 'gemini-2.5-pro', null, [], SETTINGS)).toBeNull();
  });
});

describe('vertexHost reading Claude’s replies', () => {
  const sse = (data: Record<string, unknown>): SseMessage => ({ event: data.type as string, data: JSON.stringify(data) });
  const stream = [
    sse({
      type: 'message_start',
      message: {
        id: 'msg_vrtx_01',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5-20250929',
        content: [],
        usage: {
          input_tokens: 10,
          cache_read_input_tokens: 2000,
          cache_creation_input_tokens: 300,
          cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
          output_tokens: 1,
        },
      },
    }),
    sse({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }),
    sse({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm.' } }),
    sse({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'c2ln' } }),
    sse({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }),
    sse({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hello' } }),
    sse({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 40 } }),
    sse({ type: 'message_stop' }),
  ];
  const classes = { inputTokens: 10, cacheReadTokens: 2000, cacheWriteTokens: 100, cacheWrite1hTokens: 200 };

  it('decodes a Claude stream in the Messages wire, every token class counted', () => {
    const decoder = vertexHost.decoder(false, SETTINGS, CLAUDE);
    const events: CanonicalEvent[] = stream.flatMap((m) => decoder.push(m));
    expect(decoder.done).toBe(true);
    expect(events).toEqual([
      { type: 'usage', usage: usage({ ...classes, outputTokens: 1 }) },
      { type: 'reasoning', text: 'Hmm.' },
      { type: 'reasoning', text: '', signature: 'c2ln' },
      { type: 'text', text: 'Hello' },
      { type: 'finish', reason: 'stop' },
      { type: 'usage', usage: usage({ ...classes, outputTokens: 40 }) },
    ]);
  });

  it('decodes a whole Claude reply, and passes it on when asked', () => {
    const reply = {
      id: 'msg_vrtx_02',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 5, output_tokens: 7 },
    };
    expect(vertexHost.decodeReply(JSON.stringify(reply), true, SETTINGS, CLAUDE)).toEqual([
      { type: 'upstream_id', id: 'msg_vrtx_02' },
      { type: 'tool_call', index: 0, id: 'toolu_1', name: 'get_weather', argumentsDelta: '{"city":"Paris"}' },
      { type: 'finish', reason: 'tool_calls' },
      { type: 'usage', usage: usage({ inputTokens: 5, outputTokens: 7 }) },
      { type: 'pass_through', data: reply },
    ]);
  });

  it('fails a stream that reports an error with the upstream’s reason', () => {
    const decoder = vertexHost.decoder(false, SETTINGS, CLAUDE);
    expect(() => decoder.push(sse({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }))).toThrow(
      new HostError('upstream_error', 'Overloaded'),
    );
  });
});

describe('vertexHost reading Gemini’s replies', () => {
  const chunk = (parts: object[], extra: object = {}): SseMessage => ({
    data: JSON.stringify({
      candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }],
      modelVersion: 'gemini-2.5-pro',
      createTime: '2026-11-26T11:00:00.000000Z',
      responseId: 'vrtx-resp-1',
    }),
  });
  const usageMetadata = {
    promptTokenCount: 2_010,
    candidatesTokenCount: 40,
    totalTokenCount: 2_080,
    cachedContentTokenCount: 2_000,
    thoughtsTokenCount: 30,
    trafficType: 'ON_DEMAND',
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: 2_010 }],
    cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 2_000 }],
    candidatesTokensDetails: [{ modality: 'TEXT', tokenCount: 40 }],
  };
  const billed = usage({ inputTokens: 10, cacheReadTokens: 2_000, outputTokens: 70, reasoningTokens: 30 });

  it('decodes a Gemini stream as Vertex AI sends it, every token class counted', () => {
    const decoder = vertexHost.decoder(false, SETTINGS, 'gemini-2.5-pro');
    const events = [
      chunk([{ text: 'Hmm.', thought: true }]),
      chunk([{ text: 'Hello' }]),
      chunk([{ text: '', thoughtSignature: 'c2ln' }], { finishReason: 'STOP' }),
    ].flatMap((m, i, all) =>
      decoder.push(i === all.length - 1 ? { data: JSON.stringify({ ...JSON.parse(m.data), usageMetadata }) } : m),
    );
    expect(decoder.done).toBe(true);
    expect(events).toEqual([
      { type: 'reasoning', text: 'Hmm.' },
      { type: 'text', text: 'Hello' },
      { type: 'reasoning', text: '', signature: 'c2ln' },
      { type: 'finish', reason: 'stop' },
      { type: 'usage', usage: billed },
    ]);
  });

  it('decodes a whole Gemini reply', () => {
    const reply = { ...JSON.parse(chunk([{ text: 'Hello' }], { finishReason: 'MAX_TOKENS' }).data), usageMetadata };
    expect(vertexHost.decodeReply(JSON.stringify(reply), false, SETTINGS, 'gemini-2.5-pro')).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'finish', reason: 'length' },
      { type: 'usage', usage: billed },
    ]);
  });
});

describe('vertexHost.errorMessage', () => {
  it('reads Google’s error, alone or in an array, Anthropic’s, or the text', () => {
    const google = {
      error: { code: 429, message: 'Quota exceeded for aiplatform.googleapis.com', status: 'RESOURCE_EXHAUSTED' },
    };
    const said = 'RESOURCE_EXHAUSTED: Quota exceeded for aiplatform.googleapis.com';
    expect(vertexHost.errorMessage(429, JSON.stringify(google))).toBe(said);
    expect(vertexHost.errorMessage(429, JSON.stringify([google]))).toBe(said);
    const anthropic = { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } };
    expect(vertexHost.errorMessage(400, JSON.stringify(anthropic))).toBe('max_tokens: Field required');
    expect(vertexHost.errorMessage(502, '<html>Bad gateway</html>')).toBe('<html>Bad gateway</html>');
    expect(vertexHost.errorMessage(503, '')).toBe('upstream answered 503');
  });
});
