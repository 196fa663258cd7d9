import { ApiError } from '../../src/http/api-error';
import { schemaValidation } from '../../src/http/schema-validation';
import { chatCompletionRequestSchema } from '../../src/surfaces/chat-completions/chat-completions.schema';
import { toCanonical as fromChat } from '../../src/surfaces/chat-completions/chat-completions.wire';
import type { GenerationConfig } from '../../src/surfaces/gemini/gemini.schema';
import { toCanonical as fromGemini } from '../../src/surfaces/gemini/gemini.wire';
import { messagesRequestSchema } from '../../src/surfaces/messages/messages.schema';
import { toCanonical as fromMessages } from '../../src/surfaces/messages/messages.wire';
import { responsesRequestSchema } from '../../src/surfaces/responses/responses.schema';
import { toCanonical as fromResponses } from '../../src/surfaces/responses/responses.wire';

/** Structured output as each surface reads it from its own wire field into CanonicalRequest.outputFormat. */

const SCHEMA = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false };

describe('structured output, surface by surface', () => {
  describe('chat completions: response_format', () => {
    const ask = (response_format: unknown) =>
      fromChat({ model: 'vendor/model', messages: [{ role: 'user', content: 'Hi, in JSON' }], response_format } as never);
    const valid = schemaValidation(chatCompletionRequestSchema);

    it('reads json_schema with its name, description, schema and strictness', () => {
      const request = ask({
        type: 'json_schema',
        json_schema: { name: 'animal', description: 'An animal', schema: SCHEMA, strict: true },
      });
      expect(request.outputFormat).toEqual({
        type: 'json_schema',
        schema: SCHEMA,
        name: 'animal',
        description: 'An animal',
        strict: true,
      });
      expect(request.wholeOnlyFields).toBeUndefined();
      // The body still goes whole to hosts of the format.
      expect(request.original?.body.response_format).toEqual(expect.objectContaining({ type: 'json_schema' }));
    });

    it('reads json_object as JSON mode, text (or null) as nothing', () => {
      expect(ask({ type: 'json_object' }).outputFormat).toEqual({ type: 'json_object' });
      expect(ask({ type: 'text' }).outputFormat).toBeUndefined();
      expect(ask(null).outputFormat).toBeUndefined();
    });

    it('leaves a json_schema without a schema, and a type the other formats do not know, to hosts of the format (whole-only)', () => {
      const bare = ask({ type: 'json_schema', json_schema: { name: 'x' } });
      expect(bare.outputFormat).toBeUndefined();
      expect(bare.wholeOnlyFields).toEqual(['response_format json_schema without a schema']);
      expect(ask({ type: 'regex' }).wholeOnlyFields).toEqual(['response_format regex']);
    });

    it('refuses a json_schema without its object or its name (400), as OpenAI does', () => {
      const body = (response_format: unknown) => ({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], response_format });
      expect(() => valid.transform(body({ type: 'json_schema' }), { type: 'body' })).toThrow(/json_schema/);
      expect(() => valid.transform(body({ type: 'json_schema', json_schema: { schema: SCHEMA } }), { type: 'body' })).toThrow(
        /name/,
      );
      expect(() => valid.transform(body({ type: 'json_object' }), { type: 'body' })).not.toThrow();
    });
  });

  describe('Responses: text.format', () => {
    const ask = (format: unknown) => fromResponses({ model: 'm', input: 'Hi, in JSON', text: { format } } as never);
    const valid = schemaValidation(responsesRequestSchema);

    it('reads json_schema with its fields beside its type', () => {
      expect(ask({ type: 'json_schema', name: 'animal', schema: SCHEMA, strict: false }).outputFormat).toEqual({
        type: 'json_schema',
        schema: SCHEMA,
        name: 'animal',
        strict: false,
      });
    });

    it('reads json_object as JSON mode, text as nothing', () => {
      expect(ask({ type: 'json_object' }).outputFormat).toEqual({ type: 'json_object' });
      expect(ask({ type: 'text' }).outputFormat).toBeUndefined();
    });

    it('refuses a json_schema format without its name or schema, and a type the API does not have (400)', () => {
      const body = (format: unknown) => ({ model: 'm', input: 'Hi', text: { format } });
      expect(() => valid.transform(body({ type: 'json_schema', schema: SCHEMA }), { type: 'body' })).toThrow(/name/);
      expect(() => valid.transform(body({ type: 'json_schema', name: 'a' }), { type: 'body' })).toThrow(/schema/);
      expect(() => valid.transform(body({ type: 'yaml' }), { type: 'body' })).toThrow(/text.format.type/);
    });
  });

  describe('messages: output_config.format', () => {
    const ask = (extra: Record<string, unknown>) =>
      fromMessages({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }], ...extra } as never, []);
    const valid = schemaValidation(messagesRequestSchema);

    it('reads the schema of output_config.format, beside the effort', () => {
      const request = ask({
        thinking: { type: 'adaptive' },
        output_config: { effort: 'low', format: { type: 'json_schema', schema: SCHEMA } },
      });
      expect(request.outputFormat).toEqual({ type: 'json_schema', schema: SCHEMA });
      expect(request.reasoning).toEqual({ effort: 'low' });
    });

    it("reads the structured-outputs beta's output_format too", () => {
      expect(ask({ output_format: { type: 'json_schema', schema: SCHEMA } }).outputFormat).toEqual({
        type: 'json_schema',
        schema: SCHEMA,
      });
      expect(ask({}).outputFormat).toBeUndefined();
    });

    it('refuses a format of another type, or without its schema (400), as the API does', () => {
      const body = (format: unknown) => ({
        model: 'm',
        max_tokens: 1,
        messages: [{ role: 'user', content: 'Hi' }],
        output_config: { format },
      });
      expect(() => valid.transform(body({ type: 'json_object', schema: SCHEMA }), { type: 'body' })).toThrow(
        /output_config.format.type/,
      );
      expect(() => valid.transform(body({ type: 'json_schema' }), { type: 'body' })).toThrow(/schema/);
    });
  });

  describe('Gemini: generationConfig.responseMimeType, responseJsonSchema, responseSchema', () => {
    const ask = (generationConfig: GenerationConfig) =>
      fromGemini({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], generationConfig }, false);
    const refused = (generationConfig: GenerationConfig) => {
      try {
        ask(generationConfig);
      } catch (error) {
        expect(error).toBeInstanceOf(ApiError);
        return (error as ApiError).message;
      }
      throw new Error('not refused');
    };

    it('reads responseJsonSchema (what Gemini CLI sends) as the JSON Schema it is', () => {
      expect(ask({ responseMimeType: 'application/json', responseJsonSchema: SCHEMA }).outputFormat).toEqual({
        type: 'json_schema',
        schema: SCHEMA,
      });
    });

    it('reads responseSchema as JSON Schema for the other hosts, and keeps it as given for Google hosts', () => {
      const openApi = { type: 'OBJECT', properties: { name: { type: 'STRING', nullable: true } }, propertyOrdering: ['name'] };
      expect(ask({ responseMimeType: 'application/json', responseSchema: openApi }).outputFormat).toEqual({
        type: 'json_schema',
        schema: { type: 'object', properties: { name: { type: ['string', 'null'] } } },
        openApiSchema: openApi,
      });
    });

    it('reads application/json alone as JSON mode, text/plain as nothing', () => {
      expect(ask({ responseMimeType: 'application/json' }).outputFormat).toEqual({ type: 'json_object' });
      expect(ask({ responseMimeType: 'text/plain' }).outputFormat).toBeUndefined();
    });

    it('refuses what the API refuses, and the MIME types no other format has', () => {
      expect(refused({ responseJsonSchema: SCHEMA })).toMatch(/responseJsonSchema needs responseMimeType "application\/json"/);
      expect(refused({ responseMimeType: 'application/json', responseSchema: SCHEMA, responseJsonSchema: SCHEMA })).toMatch(
        /not both/,
      );
      expect(refused({ responseMimeType: 'text/x.enum', responseSchema: { type: 'STRING', enum: ['a'] } })).toMatch(
        /text\/x.enum.*not carried/,
      );
      expect(refused({ responseMimeType: 'application/json', responseJsonSchema: true })).toMatch(/must be an object/);
    });
  });
});
