import type { CanonicalRequest, OutputFormat } from '../../src/canonical/canonical';
import { anthropicHost } from '../../src/hosts/anthropic/anthropic.host';
import { azureHost } from '../../src/hosts/azure/azure.host';
import { bedrockHost } from '../../src/hosts/bedrock/bedrock.host';
import { geminiHost } from '../../src/hosts/gemini/gemini.host';
import type { HostSettings } from '../../src/hosts/host-kind';
import { HOST_KINDS } from '../../src/hosts/hosts';
import { openAiResponsesHost } from '../../src/hosts/openai-responses/openai-responses.host';
import { openAiHost } from '../../src/hosts/openai/openai.host';
import { vertexHost } from '../../src/hosts/vertex/vertex.host';
import type { ResponsesRequest } from '../../src/surfaces/responses/responses.schema';
import { toCanonical as responsesToCanonical } from '../../src/surfaces/responses/responses.wire';
import { structuredOutputOf } from '../support/fakes/structured-output';

/** Structured output (CanonicalRequest.outputFormat) as each host kind sends it, in its API's own field. */

const request = (outputFormat?: OutputFormat, overrides: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  system: [],
  messages: [{ role: 'user', content: 'Name an animal, as JSON' }],
  tools: [],
  stop: [],
  stream: false,
  maxTokens: 100,
  ...(outputFormat ? { outputFormat } : {}),
  ...overrides,
});

const SCHEMA = {
  type: 'object',
  properties: { name: { type: 'string' }, legs: { type: 'integer' } },
  required: ['name', 'legs'],
  additionalProperties: false,
};
const NAMED: OutputFormat = { type: 'json_schema', schema: SCHEMA, name: 'animal', description: 'An animal', strict: true };
/** As a Gemini or messages client asks: a schema, no name. */
const UNNAMED: OutputFormat = { type: 'json_schema', schema: SCHEMA };
const JSON_MODE: OutputFormat = { type: 'json_object' };

const bodyOf = (upstream: { body: unknown }) => upstream.body as Record<string, any>;

describe('structured output, host kind by host kind', () => {
  describe('openai (chat completions)', () => {
    const build = (format?: OutputFormat) => bodyOf(openAiHost.buildRequest(request(format), 'gpt-4o', 'k'));

    it('sends json_schema nested under response_format.json_schema, with its name, description and strictness', () => {
      expect(build(NAMED).response_format).toEqual({
        type: 'json_schema',
        json_schema: { name: 'animal', description: 'An animal', schema: SCHEMA, strict: true },
      });
    });

    it('names a schema asked for without a name (the API requires one), and says no strictness it was not told', () => {
      expect(build(UNNAMED).response_format).toEqual({ type: 'json_schema', json_schema: { name: 'response', schema: SCHEMA } });
    });

    it('sends JSON mode as json_object, and nothing for text', () => {
      expect(build(JSON_MODE).response_format).toEqual({ type: 'json_object' });
      expect(build()).not.toHaveProperty('response_format');
    });

    it('passes a chat-completions body whole: its own response_format, not a translation', () => {
      const original = {
        model: 'vendor/model',
        messages: [],
        response_format: { type: 'json_schema', json_schema: { name: 'x' } },
      };
      const upstream = openAiHost.buildRequest(
        request(JSON_MODE, { original: { format: 'chat-completions', body: original } }),
        'gpt-4o',
        'k',
      );
      expect(bodyOf(upstream).response_format).toEqual(original.response_format);
    });
  });

  describe('openai-responses', () => {
    const build = (format?: OutputFormat) => bodyOf(openAiResponsesHost.buildRequest(request(format), 'gpt-5', 'k'));
    const build2 = (asked: CanonicalRequest) => bodyOf(openAiResponsesHost.buildRequest(asked, 'gpt-5', 'k'));

    it('sends text.format with the name, description, schema and strictness beside its type', () => {
      expect(build(NAMED).text).toEqual({
        format: { type: 'json_schema', name: 'animal', description: 'An animal', schema: SCHEMA, strict: true },
      });
      expect(build(UNNAMED).text).toEqual({ format: { type: 'json_schema', name: 'response', schema: SCHEMA } });
    });

    it('sends JSON mode as json_object, and no text field for text', () => {
      expect(build(JSON_MODE).text).toEqual({ format: { type: 'json_object' } });
      expect(build()).not.toHaveProperty('text');
    });

    it("declares OpenAI's rule for JSON mode, on OpenAI's API only: the word in the input messages", () => {
      expect(openAiResponsesHost.limits?.('gpt-5', {}, 'https://api.openai.com/v1').outputFormats).toMatchObject({
        takes: ['json_object', 'json_schema'],
        field: 'text.format',
        jsonModeNeedsTheWord: { where: 'the input messages, not the instructions,' },
      });
      expect(openAiResponsesHost.limits?.('gpt-oss-120b', {}, 'http://vllm.internal:8000/v1')).toEqual({});
    });

    // The rule admission applies says what the API does: the fake Responses API refuses as OpenAI's does.
    const tool = { role: 'tool' as const, toolCallId: 'call_1', content: '{"json": true}' };
    const call = { role: 'assistant' as const, content: '', toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{}' }] };
    const translated: Array<[string, Partial<CanonicalRequest>, boolean]> = [
      ['the word in a user message', { messages: [{ role: 'user', content: 'Name an animal, as JSON' }] }, true],
      [
        'the word in the leading system text only (sent as instructions)',
        { system: ['Answer in JSON.'], messages: [{ role: 'user', content: 'Name an animal' }] },
        false,
      ],
      [
        'the word in a later system message (sent as a developer message)',
        {
          messages: [
            { role: 'user', content: 'Name an animal' },
            { role: 'system', content: 'Reply in json' },
          ],
        },
        true,
      ],
      [
        "the word in a tool's result only (a function_call_output item, no message)",
        { messages: [{ role: 'user', content: 'Name an animal' }, call, tool] },
        false,
      ],
    ];
    it.each(translated)('translated, %s: says it where the API looks as the API judges it', (_, overrides, says) => {
      const asked = request(JSON_MODE, overrides);
      const rule = openAiResponsesHost.limits!('gpt-5', {}, 'https://api.openai.com/v1').outputFormats!.jsonModeNeedsTheWord!;
      expect(rule.says(asked, false)).toBe(says);
      const verdict = structuredOutputOf('responses', build2(asked));
      expect(typeof verdict === 'string' ? verdict : 'taken').toBe(
        says
          ? 'taken'
          : "Response input messages must contain the word 'json' in some form to use 'text.format' of type 'json_object'.",
      );
      // Chat completions count every message, system ones and tool results too.
      const chat = openAiHost.limits!('gpt-5', {}, 'https://api.openai.com/v1').outputFormats!.jsonModeNeedsTheWord!;
      expect(chat.says(asked, false)).toBe(true);
      expect(structuredOutputOf('openai', bodyOf(openAiHost.buildRequest(asked, 'gpt-5', 'k')))).toEqual({ schema: null });
    });

    const whole: Array<[string, Record<string, unknown>, boolean]> = [
      ['the word in instructions only', { instructions: 'Reply in JSON.', input: 'Name an animal' }, false],
      ['the word in the input string', { instructions: 'Be brief.', input: 'Name an animal as json' }, true],
      [
        'the word in a leading developer input message (its system text, for the other formats)',
        {
          input: [
            { role: 'developer', content: 'Reply in json.' },
            { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Name an animal' }] },
          ],
        },
        true,
      ],
    ];
    it.each(whole)("a Responses client's body passed whole, %s: as the API judges it", (_, fields, says) => {
      const body = { model: 'vendor/model', text: { format: { type: 'json_object' } }, ...fields };
      const asked = responsesToCanonical(body as unknown as ResponsesRequest);
      const rule = openAiResponsesHost.limits!('gpt-5', {}, 'https://api.openai.com/v1').outputFormats!.jsonModeNeedsTheWord!;
      expect(rule.says(asked, true)).toBe(says);
      expect(typeof structuredOutputOf('responses', build2(asked)) !== 'string').toBe(says);
    });
  });

  describe('azure (either API)', () => {
    const settings = (api: string): HostSettings => ({
      endpoint: '',
      route: 'deployments',
      api,
      apiVersion: '',
      auth: 'api-key',
    });

    it("keeps OpenAI's limits on the API the host speaks: JSON mode's word where that API looks for it", () => {
      expect(azureHost.limits?.('dep', settings('responses'), '')).toBe(
        openAiResponsesHost.limits?.('gpt-5', {}, 'https://api.openai.com/v1'),
      );
      expect(azureHost.limits?.('dep', settings('chat-completions'), '')).toBe(
        openAiHost.limits?.('gpt-5', {}, 'https://api.openai.com/v1'),
      );
    });

    it('sends what OpenAI takes on the API the host speaks', () => {
      expect(bodyOf(azureHost.buildRequest(request(NAMED), 'dep', 'k', settings('chat-completions'))).response_format).toEqual(
        bodyOf(openAiHost.buildRequest(request(NAMED), 'dep', null)).response_format,
      );
      expect(bodyOf(azureHost.buildRequest(request(JSON_MODE), 'dep', 'k', settings('responses'))).text).toEqual({
        format: { type: 'json_object' },
      });
    });
  });

  describe('anthropic', () => {
    const build = (format?: OutputFormat) => bodyOf(anthropicHost.buildRequest(request(format), 'claude-sonnet-4-5', 'k'));

    it('sends output_config.format with the schema only (the API has no name, description or strictness for it), and no beta', () => {
      expect(build(NAMED).output_config).toEqual({ format: { type: 'json_schema', schema: SCHEMA } });
      expect(anthropicHost.buildRequest(request(NAMED), 'claude-sonnet-4-5', 'k').headers).not.toHaveProperty('anthropic-beta');
      expect(build()).not.toHaveProperty('output_config');
    });

    it('declares that it takes a schema only: no JSON mode', () => {
      expect(anthropicHost.limits?.('claude-sonnet-4-5', {}, 'https://api.anthropic.com/v1').outputFormats).toEqual({
        takes: ['json_schema'],
        field: 'output_config.format',
      });
    });
  });

  describe('gemini', () => {
    const build = (format?: OutputFormat) =>
      bodyOf(geminiHost.buildRequest(request(format), 'gemini-2.5-flash', 'k')).generationConfig as Record<string, unknown>;

    it('sends a JSON Schema as responseJsonSchema beside responseMimeType application/json', () => {
      expect(build(NAMED)).toMatchObject({ responseMimeType: 'application/json', responseJsonSchema: SCHEMA });
      expect(build(NAMED)).not.toHaveProperty('responseSchema');
    });

    it("sends a Gemini client's OpenAPI-subset schema as its responseSchema, as given", () => {
      const openApi = { type: 'OBJECT', properties: { name: { type: 'STRING' } }, propertyOrdering: ['name'] };
      const config = build({ type: 'json_schema', schema: { type: 'object' }, openApiSchema: openApi });
      expect(config).toMatchObject({ responseMimeType: 'application/json', responseSchema: openApi });
      expect(config).not.toHaveProperty('responseJsonSchema');
    });

    it('sends JSON mode as responseMimeType alone, and nothing for text', () => {
      const mode = build(JSON_MODE);
      expect(mode.responseMimeType).toBe('application/json');
      expect(mode).not.toHaveProperty('responseJsonSchema');
      expect(build()).not.toHaveProperty('responseMimeType');
    });

    it('takes every mode', () => {
      expect(geminiHost.limits?.('gemini-3-pro-preview', {}, '').outputFormats).toBeUndefined();
      // Before 3, not beside function tools.
      expect(geminiHost.limits?.('gemini-2.5-flash', {}, '').outputFormats).toMatchObject({
        takes: ['json_object', 'json_schema'],
        notWithFunctionTools: true,
      });
    });
  });

  describe('vertex', () => {
    const SETTINGS = { project: 'p', location: 'us-east5', credentialsFile: '', publisher: 'auto' };

    it("sends Gemini's fields to Google's models and Anthropic's to Claude", () => {
      const gemini = bodyOf(vertexHost.buildRequest(request(NAMED), 'gemini-2.5-pro', null, SETTINGS));
      expect(gemini.generationConfig).toMatchObject({ responseMimeType: 'application/json', responseJsonSchema: SCHEMA });
      const claude = bodyOf(vertexHost.buildRequest(request(NAMED), 'claude-sonnet-4-5@20250929', null, SETTINGS));
      expect(claude.output_config).toEqual({ format: { type: 'json_schema', schema: SCHEMA } });
    });

    it('takes JSON mode for Gemini only', () => {
      expect(vertexHost.limits?.('gemini-2.5-pro', SETTINGS, '').outputFormats?.takes).toEqual(['json_object', 'json_schema']);
      expect(vertexHost.limits?.('claude-sonnet-4-5@20250929', SETTINGS, '').outputFormats?.takes).toEqual(['json_schema']);
    });
  });

  describe('bedrock', () => {
    const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
    const CONVERSE = { region: 'us-east-1', api: 'converse' };
    const INVOKE = { region: 'us-east-1', api: 'invoke' };

    it("sends Converse's outputConfig.textFormat, the schema as JSON text, with its name and description", () => {
      const body = bodyOf(bedrockHost.buildRequest(request(NAMED), CLAUDE, null, CONVERSE));
      expect(body.outputConfig).toEqual({
        textFormat: {
          type: 'json_schema',
          structure: { jsonSchema: { schema: JSON.stringify(SCHEMA), name: 'animal', description: 'An animal' } },
        },
      });
      expect(JSON.parse(body.outputConfig.textFormat.structure.jsonSchema.schema)).toEqual(SCHEMA);
      const unnamed = bodyOf(bedrockHost.buildRequest(request(UNNAMED), CLAUDE, null, CONVERSE));
      expect(unnamed.outputConfig.textFormat.structure.jsonSchema).toEqual({ schema: JSON.stringify(SCHEMA) });
    });

    it("sends InvokeModel's Anthropic body with output_config.format", () => {
      const body = bodyOf(bedrockHost.buildRequest(request(NAMED), CLAUDE, null, INVOKE));
      expect(body.output_config).toEqual({ format: { type: 'json_schema', schema: SCHEMA } });
    });

    it('declares a schema only on both APIs, each by its own field', () => {
      expect(bedrockHost.limits?.(CLAUDE, CONVERSE, '').outputFormats).toEqual({
        takes: ['json_schema'],
        field: 'outputConfig.textFormat',
      });
      expect(bedrockHost.limits?.(CLAUDE, INVOKE, '').outputFormats).toEqual({
        takes: ['json_schema'],
        field: 'output_config.format',
      });
    });
  });

  it('every kind sends a schema asked for somewhere in its body: none drops it', () => {
    const settingsOf: Record<string, HostSettings> = {
      azure: { endpoint: '', route: 'deployments', api: 'chat-completions', apiVersion: '', auth: 'api-key' },
      bedrock: { region: 'us-east-1', api: 'converse' },
      vertex: { project: 'p', location: 'l', credentialsFile: '', publisher: 'auto' },
    };
    for (const [name, kind] of Object.entries(HOST_KINDS)) {
      const model = name === 'bedrock' ? 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' : 'some-model';
      const sent = JSON.stringify(kind.buildRequest(request(NAMED), model, 'k', settingsOf[name] ?? {}).body);
      expect({ name, carried: sent.includes(JSON.stringify(SCHEMA.properties)) || sent.includes('\\"legs\\"') }).toEqual({
        name,
        carried: true,
      });
    }
  });
});
