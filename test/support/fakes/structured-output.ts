// Structured output as the fake upstreams honour it: each API's field read as its reference has it
// (OpenAI's chat `response_format` and Responses `text.format`, Anthropic's `output_config.format`, the
// Gemini API's `responseMimeType` with `responseJsonSchema` or `responseSchema`, Converse's
// `outputConfig.textFormat`), its wrong shapes refused with a 400 in the API's words, and the reply's
// text made JSON (an instance of the schema) when a test's configured text is not. A gateway that drops
// or misplaces the field gets plain text back, or a 400: tests can tell.
import type { FakeReply } from '../fake-upstream';

/** The APIs whose structured output the fakes read. */
export type StructuredApi = 'openai' | 'responses' | 'anthropic' | 'gemini' | 'converse';

/** JSON asked for: `schema` null is JSON mode (any object). */
export interface JsonAsked {
  schema: Record<string, unknown> | null;
}

const isObject = (value: unknown): value is Record<string, any> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** OpenAI's rule for a response format's name. */
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The text of a chat conversation, every message's (system ones too), for JSON mode's rule ("json" must appear in it). */
const conversationText = (body: any): string => JSON.stringify(body.messages).toLowerCase();

/**
 * The text of a Responses request's input messages, for the same rule there: `instructions` do not
 * count (OpenAI's 400 names the input messages), nor items that are no messages (function call
 * outputs). The input is a string, or items; a message's content a string, or parts with text.
 */
function inputMessagesText(body: any): string {
  if (typeof body.input === 'string') return body.input.toLowerCase();
  if (!Array.isArray(body.input)) return '';
  const messages = body.input.filter(
    (item: any) => isObject(item) && typeof item.role === 'string' && (item.type === undefined || item.type === 'message'),
  );
  const text = (content: unknown): string =>
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content.map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : '')).join('\n')
        : '';
  return messages
    .map((m: any) => text(m.content))
    .join('\n')
    .toLowerCase();
}

function openAiChat(body: any): JsonAsked | string | null {
  const format = body.response_format;
  if (format == null || format.type === 'text') return null;
  if (format.type === 'json_object') {
    if (!conversationText(body).includes('json'))
      return "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.";
    return { schema: null };
  }
  if (format.type !== 'json_schema')
    return `Invalid value: '${format.type}'. Supported values are: 'text', 'json_object', and 'json_schema'.`;
  const named = format.json_schema;
  if (!isObject(named)) return "Missing required parameter: 'response_format.json_schema'.";
  if (typeof named.name !== 'string' || !NAME.test(named.name))
    return "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.";
  if (named.schema !== undefined && !isObject(named.schema)) return "Invalid type for 'response_format.json_schema.schema'.";
  return { schema: named.schema ?? null };
}

function responses(body: any): JsonAsked | string | null {
  const format = body.text?.format;
  if (format == null || format.type === 'text') return null;
  if (format.type === 'json_object') {
    if (!inputMessagesText(body).includes('json'))
      return "Response input messages must contain the word 'json' in some form to use 'text.format' of type 'json_object'.";
    return { schema: null };
  }
  if (format.type !== 'json_schema')
    return `Invalid value: '${format.type}'. Supported values are: 'text', 'json_object', and 'json_schema'.`;
  // Chat completions nest these under `json_schema`; the Responses API does not.
  if ('json_schema' in format) return "Unknown parameter: 'text.format.json_schema'.";
  if (typeof format.name !== 'string') return "Missing required parameter: 'text.format.name'.";
  if (!NAME.test(format.name)) return "Invalid 'text.format.name': string does not match pattern.";
  if (!isObject(format.schema)) return "Missing required parameter: 'text.format.schema'.";
  return { schema: format.schema };
}

function anthropic(body: any): JsonAsked | string | null {
  if ('response_format' in body) return 'response_format: Extra inputs are not permitted';
  const format = body.output_config?.format;
  if (format == null) return null;
  if (format.type !== 'json_schema') return "output_config.format.type: Input should be 'json_schema'";
  if (!isObject(format.schema)) return 'output_config.format.schema: Field required';
  const extra = Object.keys(format).find((key) => key !== 'type' && key !== 'schema');
  if (extra) return `output_config.format.${extra}: Extra inputs are not permitted`;
  return { schema: format.schema };
}

function gemini(body: any): JsonAsked | string | null {
  const config = body.generationConfig ?? {};
  const { responseMimeType: mime, responseSchema, responseJsonSchema } = config;
  if (responseSchema !== undefined && responseJsonSchema !== undefined)
    return 'response_schema and response_json_schema cannot both be set.';
  const schema = responseJsonSchema ?? responseSchema;
  if (schema !== undefined && mime !== 'application/json')
    return `response_mime_type must be application/json when a response schema is set (got ${JSON.stringify(mime ?? 'text/plain')}).`;
  if (mime !== 'application/json') return null;
  if (schema === undefined) return { schema: null };
  if (!isObject(schema)) return 'Invalid JSON payload received. Invalid response schema.';
  return { schema };
}

function converse(body: any): JsonAsked | string | null {
  const format = body.outputConfig?.textFormat;
  if (format === undefined) return null;
  const at = "'outputConfig.textFormat";
  if (format.type !== 'json_schema')
    return `1 validation error detected: Value '${format.type}' at ${at}.type' failed to satisfy constraint: Member must satisfy enum value set: [json_schema]`;
  const definition = format.structure?.jsonSchema;
  if (!isObject(definition) || typeof definition.schema !== 'string')
    return `1 validation error detected: Value null at ${at}.structure.jsonSchema.schema' failed to satisfy constraint: Member must not be null`;
  let schema: unknown;
  try {
    schema = JSON.parse(definition.schema);
  } catch {
    return 'The provided JSON schema is not valid JSON.';
  }
  return isObject(schema) ? { schema } : 'The provided JSON schema must be an object.';
}

const READERS: Record<StructuredApi, (body: any) => JsonAsked | string | null> = {
  openai: openAiChat,
  responses,
  anthropic,
  gemini,
  converse,
};

/** What a request asks for of its reply's form: JSON (and its schema), nothing (null), or the API's refusal (a string). */
export const structuredOutputOf = (api: StructuredApi, body: any): JsonAsked | string | null =>
  isObject(body) ? READERS[api](body) : null;

/** The schema's type: JSON Schema's, or the Gemini API's OpenAPI subset (in capitals), the first not null. */
function typeOf(schema: Record<string, any>): string | undefined {
  const types: unknown[] = Array.isArray(schema.type) ? schema.type : [schema.type];
  const type = types.find((t) => typeof t === 'string' && t.toLowerCase() !== 'null') as string | undefined;
  if (type) return type.toLowerCase();
  if (isObject(schema.properties)) return 'object';
  return undefined;
}

/** A value the schema describes: every property given, the first of an enum or a union. */
export function instanceOf(schema: unknown): unknown {
  if (!isObject(schema)) return null;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if ('const' in schema) return schema.const;
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union) && union.length > 0) return instanceOf(union[0]);
  switch (typeOf(schema)) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, s]) => [name, instanceOf(s)]));
    case 'array':
      return [instanceOf(schema.items)];
    case 'string':
      return 'fake';
    case 'integer':
      return 1;
    case 'number':
      return 1.5;
    case 'boolean':
      return true;
    default:
      return null;
  }
}

const isJson = (text: string | undefined): boolean => {
  if (text === undefined) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/**
 * The reply as a host honouring the ask writes it: its text JSON — the configured text when it is,
 * else an instance of the schema (JSON mode: the text as `{"text": …}`). A reply of tool calls only is left.
 */
export function structuredReply(reply: FakeReply, asked: JsonAsked | null): FakeReply {
  if (asked === null || isJson(reply.text) || (reply.text === undefined && reply.toolCalls?.length)) return reply;
  const value = asked.schema === null ? { text: reply.text ?? '' } : instanceOf(asked.schema);
  return { ...reply, text: JSON.stringify(value) };
}
