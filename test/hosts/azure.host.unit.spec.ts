import { join } from 'node:path';
import { CanonicalEvent, CanonicalRequest, HostError, Usage } from '../../src/canonical/canonical';
import { Catalogue } from '../../src/catalogue/catalogue';
import { azureHost } from '../../src/hosts/azure/azure.host';
import type { HostSettings } from '../../src/hosts/host-kind';
import { openAiHost } from '../../src/hosts/openai/openai.host';
import { openAiResponsesHost } from '../../src/hosts/openai-responses/openai-responses.host';
import { usage } from '../support/usage';

const counted = (counts: Partial<Usage>): CanonicalEvent => ({ type: 'usage', usage: usage(counts) });

const request = (overrides: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  system: ['Be brief.'],
  messages: [{ role: 'user', content: 'Hi' }],
  tools: [],
  stop: [],
  stream: true,
  maxTokens: 100,
  ...overrides,
});

/** A host entry's settings as the catalogue reads them: the defaults, with these given. */
const settings = (given: Partial<Record<'endpoint' | 'route' | 'api' | 'apiVersion' | 'auth', string>> = {}): HostSettings => ({
  endpoint: '',
  route: 'deployments',
  api: 'chat-completions',
  apiVersion: '',
  auth: 'api-key',
  ...given,
});

describe('azureHost.buildRequest', () => {
  it('on the deployments route: the deployment in the path, the GA API version, the key in api-key; the body as the openai kind builds it', () => {
    const upstream = azureHost.buildRequest(request(), 'gpt-4o-prod', 'azure-key', settings());
    expect(upstream.path).toBe('/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21');
    expect(upstream.headers).toEqual({ 'content-type': 'application/json', accept: 'text/event-stream', 'api-key': 'azure-key' });
    expect(upstream.body).toEqual(openAiHost.buildRequest(request(), 'gpt-4o-prod', null).body);
  });

  it('sends the API version the entry names, and a deployment name as a path segment', () => {
    const upstream = azureHost.buildRequest(request(), 'my deployment/1', 'k', settings({ apiVersion: '2025-04-01-preview' }));
    expect(upstream.path).toBe('/openai/deployments/my%20deployment%2F1/chat/completions?api-version=2025-04-01-preview');
  });

  it('on the v1 route: /openai/v1 with the deployment in the body’s model, and no API version unless named', () => {
    const v1 = azureHost.buildRequest(request(), 'gpt-4.1', 'k', settings({ route: 'v1' }));
    expect(v1.path).toBe('/openai/v1/chat/completions');
    expect(v1.body).toMatchObject({ model: 'gpt-4.1' });
    expect(azureHost.buildRequest(request(), 'gpt-4.1', 'k', settings({ route: 'v1', apiVersion: 'preview' })).path).toBe(
      '/openai/v1/chat/completions?api-version=preview',
    );
  });

  it('the Responses API: /openai/v1/responses, or /openai/responses with a preview version on the dated route; the body as the openai-responses kind builds it', () => {
    const v1 = azureHost.buildRequest(request(), 'o4-mini', 'k', settings({ route: 'v1', api: 'responses' }));
    expect(v1.path).toBe('/openai/v1/responses');
    expect(v1.body).toEqual(openAiResponsesHost.buildRequest(request(), 'o4-mini', null).body);
    expect(azureHost.buildRequest(request(), 'o4-mini', 'k', settings({ api: 'responses' })).path).toBe(
      '/openai/responses?api-version=2025-04-01-preview',
    );
  });

  it('passes a client’s own body whole in the format the host speaks', () => {
    const chat = { model: 'azure/gpt-4o', messages: [{ role: 'user', content: 'Hi' }], stream: true, seed: 7 };
    const passed = azureHost.buildRequest(
      request({ original: { format: 'chat-completions', body: chat } }),
      'gpt-4o-prod',
      'k',
      settings(),
    );
    expect(passed).toMatchObject({
      passThrough: true,
      body: { ...chat, model: 'gpt-4o-prod', stream_options: { include_usage: true } },
    });
    const responses = { model: 'azure/o4-mini', input: 'Hi', include: ['reasoning.encrypted_content'] };
    const whole = azureHost.buildRequest(
      request({ original: { format: 'responses', body: responses } }),
      'o4-mini',
      'k',
      settings({ route: 'v1', api: 'responses' }),
    );
    expect(whole).toMatchObject({ passThrough: true, path: '/openai/v1/responses', body: { ...responses, model: 'o4-mini' } });
  });

  it('with Entra ID, sends no key (the authorizer adds the token)', () => {
    const upstream = azureHost.buildRequest(request(), 'gpt-4o-prod', 'a-key-not-to-send', settings({ auth: 'entra' }));
    expect(upstream.headers).not.toHaveProperty('api-key');
    expect(upstream.headers).not.toHaveProperty('authorization');
  });

  it('embeddings on a deployment, or on the v1 route, with the client’s body whole', () => {
    const body = { model: 'azure/embed', input: ['a', 'b'], dimensions: 256 };
    const deployment = azureHost.embeddingsRequest!(body, 'embed-3-small', 'k', settings());
    expect(deployment).toEqual({
      path: '/openai/deployments/embed-3-small/embeddings?api-version=2024-10-21',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'api-key': 'k' },
      body: { ...body, model: 'embed-3-small' },
    });
    expect(azureHost.embeddingsRequest!(body, 'embed-3-small', 'k', settings({ route: 'v1' })).path).toBe(
      '/openai/v1/embeddings',
    );
  });
});

/** Azure's stream for "Hi there" on gpt-4o: the prompt's filter chunk (no choices), annotated choices, the usage chunk. */
const SAFE = { filtered: false, severity: 'safe' };
const AZURE_STREAM = [
  {
    choices: [],
    created: 0,
    id: '',
    model: '',
    object: '',
    prompt_filter_results: [
      {
        prompt_index: 0,
        content_filter_results: { hate: SAFE, jailbreak: { filtered: false, detected: false }, violence: SAFE },
      },
    ],
  },
  {
    choices: [{ content_filter_results: {}, delta: { content: '', role: 'assistant' }, finish_reason: null, index: 0 }],
    id: 'chatcmpl-az1',
    model: 'gpt-4o-2024-11-20',
    object: 'chat.completion.chunk',
    usage: null,
  },
  {
    choices: [
      { content_filter_results: { hate: SAFE, violence: SAFE }, delta: { content: 'Hi there' }, finish_reason: null, index: 0 },
    ],
    id: 'chatcmpl-az1',
    object: 'chat.completion.chunk',
    usage: null,
  },
  {
    choices: [{ content_filter_results: {}, delta: {}, finish_reason: 'stop', index: 0 }],
    id: 'chatcmpl-az1',
    object: 'chat.completion.chunk',
    usage: null,
  },
  {
    choices: [],
    id: 'chatcmpl-az1',
    object: 'chat.completion.chunk',
    usage: {
      completion_tokens: 40,
      completion_tokens_details: { reasoning_tokens: 16, audio_tokens: 0 },
      prompt_tokens: 1500,
      prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
      total_tokens: 1540,
    },
  },
];

describe('azureHost decoding a chat-completions stream', () => {
  it('reads past the prompt’s filter chunk, and counts the cache’s reads and the reasoning', () => {
    const decoder = azureHost.decoder(false, settings());
    const events = AZURE_STREAM.flatMap((chunk) => decoder.push({ data: JSON.stringify(chunk) }));
    decoder.push({ data: '[DONE]' });
    expect(events).toEqual([
      { type: 'text', text: 'Hi there' },
      { type: 'finish', reason: 'stop' },
      counted({ inputTokens: 476, cacheReadTokens: 1024, outputTokens: 40, reasoningTokens: 16 }),
    ]);
    expect(decoder.done).toBe(true);
  });

  it('passed whole, records the reply’s id from the first chunk that has one', () => {
    const decoder = azureHost.decoder(true, settings());
    const events = AZURE_STREAM.slice(0, 2).flatMap((chunk) => decoder.push({ data: JSON.stringify(chunk) }));
    expect(events.filter((e) => e.type === 'upstream_id')).toEqual([{ type: 'upstream_id', id: 'chatcmpl-az1' }]);
    expect(events.filter((e) => e.type === 'pass_through')).toHaveLength(2);
  });

  it('a completion its content filter stopped finishes as content_filter, streamed or whole', () => {
    const decoder = azureHost.decoder(false, settings());
    const last = {
      choices: [
        {
          content_filter_results: { violence: { filtered: true, severity: 'medium' } },
          delta: {},
          finish_reason: 'content_filter',
          index: 0,
        },
      ],
    };
    expect(decoder.push({ data: JSON.stringify(last) })).toEqual([{ type: 'finish', reason: 'content_filter' }]);
    const whole = {
      id: 'chatcmpl-az2',
      object: 'chat.completion',
      choices: [
        {
          content_filter_results: { violence: { filtered: true, severity: 'medium' } },
          finish_reason: 'content_filter',
          index: 0,
          message: { role: 'assistant' },
        },
      ],
      prompt_filter_results: AZURE_STREAM[0].prompt_filter_results,
      usage: { prompt_tokens: 20, completion_tokens: 3, total_tokens: 23 },
    };
    expect(azureHost.decodeReply(JSON.stringify(whole), false, settings())).toEqual([
      { type: 'finish', reason: 'content_filter' },
      counted({ inputTokens: 20, outputTokens: 3 }),
    ]);
  });
});

describe('azureHost decoding the Responses API', () => {
  it('uses the Responses decoder on a host whose api is responses', () => {
    const decoder = azureHost.decoder(false, settings({ api: 'responses', route: 'v1' }));
    const delta = { type: 'response.output_text.delta', delta: 'Hi', sequence_number: 1 };
    expect(decoder.push({ event: delta.type, data: JSON.stringify(delta) })).toEqual([{ type: 'text', text: 'Hi' }]);
    const reply = {
      id: 'resp_1',
      status: 'completed',
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello' }] }],
      usage: {
        input_tokens: 10,
        input_tokens_details: { cached_tokens: 4 },
        output_tokens: 2,
        output_tokens_details: { reasoning_tokens: 1 },
      },
    };
    expect(azureHost.decodeReply(JSON.stringify(reply), false, settings({ api: 'responses' }))).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'finish', reason: 'stop' },
      counted({ inputTokens: 6, cacheReadTokens: 4, outputTokens: 2, reasoningTokens: 1 }),
    ]);
    // The same body is no chat completion.
    expect(() => azureHost.decodeReply(JSON.stringify(reply), false, settings())).toThrow(HostError);
  });
});

describe('azureHost.errorMessage', () => {
  it('names the categories its content filter refused a prompt for', () => {
    const body = {
      error: {
        message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
        type: null,
        param: 'prompt',
        code: 'content_filter',
        status: 400,
        innererror: {
          code: 'ResponsibleAIPolicyViolation',
          content_filter_result: {
            hate: SAFE,
            jailbreak: { filtered: true, detected: true },
            violence: { filtered: true, severity: 'medium' },
          },
        },
      },
    };
    expect(azureHost.errorMessage(400, JSON.stringify(body))).toBe(
      "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. (content filter: jailbreak, violence (medium))",
    );
    // The reference's name for the same field.
    const { content_filter_result: results, ...inner } = body.error.innererror;
    const documented = { error: { ...body.error, innererror: { ...inner, content_filter_results: results } } };
    expect(azureHost.errorMessage(400, JSON.stringify(documented))).toMatch(
      /\(content filter: jailbreak, violence \(medium\)\)$/,
    );
  });

  it('reads Azure’s other errors as OpenAI’s, and a body that is not JSON as text', () => {
    const throttled = {
      error: { code: '429', message: 'Requests … have exceeded token rate limit. Please retry after 2 seconds.' },
    };
    expect(azureHost.errorMessage(429, JSON.stringify(throttled))).toBe(throttled.error.message);
    expect(azureHost.errorMessage(502, '<html>Bad gateway</html>')).toBe('<html>Bad gateway</html>');
  });
});

describe('azureHost.authorizer', () => {
  const host = (auth: string) => ({
    id: 'azure',
    baseUrl: 'https://r.openai.azure.com',
    apiKey: null,
    settings: settings({ auth }),
  });

  it('needs none with an api key, and one (an Entra ID token’s) with entra', () => {
    expect(azureHost.authorizer!(host('api-key'))).toBeNull();
    expect(azureHost.authorizer!(host('entra'))).toEqual({ headers: expect.any(Function) });
  });
});

describe('an azure host in the catalogue', () => {
  const parse = (entry: Record<string, unknown>) =>
    Catalogue.parse(
      {
        hosts: [{ id: 'az', kind: 'azure', apiKeyEnv: 'AZURE_OPENAI_API_KEY', ...entry }],
        models: [
          {
            slug: 'azure/gpt-4o',
            id: '12121212-1212-4212-8212-121212121212',
            name: 'GPT-4o on Azure',
            contextLength: 128000,
            maxOutputTokens: 16384,
            hosts: [{ host: 'az', model: 'gpt-4o', pricing: { input: '2.50', output: '10.00' } }],
          },
        ],
      },
      { AZURE_OPENAI_API_KEY: 'k', AZURE_OPENAI_ENDPOINT: 'https://contoso.openai.azure.com/' },
    ).hosts[0];

  it('takes its endpoint as its base URL, or a baseUrl, with the defaults of the fields not given', () => {
    expect(parse({ endpoint: '${AZURE_OPENAI_ENDPOINT}' })).toMatchObject({
      baseUrl: 'https://contoso.openai.azure.com',
      settings: { route: 'deployments', api: 'chat-completions', apiVersion: '', auth: 'api-key' },
    });
    expect(parse({ baseUrl: 'https://apim.example.com/aoai', route: 'v1', api: 'responses' })).toMatchObject({
      baseUrl: 'https://apim.example.com/aoai',
      settings: { route: 'v1', api: 'responses' },
    });
  });

  it('refuses an entry with neither, and a route, API or auth it does not know', () => {
    expect(() => parse({})).toThrow(/"baseUrl" must be a non-empty string/);
    expect(() => parse({ endpoint: 'https://r.openai.azure.com', route: 'v2' })).toThrow(/"route" must be "deployments" or "v1"/);
    expect(() => parse({ endpoint: 'https://r.openai.azure.com', api: 'assistants' })).toThrow(
      /"api" must be "chat-completions" or "responses"/,
    );
    expect(() => parse({ endpoint: 'https://r.openai.azure.com', auth: 'password' })).toThrow(
      /"auth" must be "api-key" or "entra"/,
    );
  });
});

describe('the shipped catalogue’s azure hosts', () => {
  const shipped = (env: Record<string, string>) => Catalogue.load(join(__dirname, '../../catalogue/default.json'), env);

  it('serve GPT-4.1, GPT-4o mini and its embeddings on deployments, o4-mini on the v1 Responses API, at Azure’s list prices', () => {
    const catalogue = shipped({ AZURE_OPENAI_API_KEY: 'k', AZURE_OPENAI_ENDPOINT: 'https://contoso.openai.azure.com' });
    const on = (slug: string) => catalogue.find(slug)!.hosts.find((h) => h.host.kind === 'azure')!;
    expect(on('openai/gpt-4.1')).toMatchObject({
      model: 'gpt-4.1',
      host: { baseUrl: 'https://contoso.openai.azure.com', settings: { route: 'deployments', auth: 'api-key' } },
      listPrices: { input: '2.00', cacheRead: '0.50', output: '8.00' },
    });
    expect(on('openai/gpt-4o-mini').listPrices).toMatchObject({ input: '0.15', cacheRead: '0.075', output: '0.60' });
    expect(on('openai/o4-mini')).toMatchObject({
      model: 'o4-mini',
      host: { settings: { route: 'v1', api: 'responses' } },
      listPrices: { input: '1.10', cacheRead: '0.275', output: '4.40' },
    });
    expect(on('openai/text-embedding-3-small').listPrices).toMatchObject({ input: '0.02' });
    // With only Azure's key, Azure serves them all.
    const servable = catalogue.servable().map((m) => m.slug);
    expect(servable).toEqual(expect.arrayContaining(['openai/gpt-4.1', 'openai/gpt-4o-mini', 'openai/o4-mini']));
  });

  it('cannot serve without Azure’s key', () => {
    expect(
      shipped({})
        .servable()
        .map((m) => m.slug),
    ).not.toContain('openai/o4-mini');
  });
});
