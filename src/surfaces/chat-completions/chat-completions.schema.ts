import {
  integerFrom,
  modelReference,
  nonEmptyString,
  numberBetween,
  object,
  optionalBoolean,
} from '../../http/schema-validation';
import { standardServiceTier } from '../priced-modes';

/**
 * A content part: any typed part is accepted; text parts carry text, image parts a URL. Across formats
 * text and images are translated, other parts (audio, files) are not carried (README).
 */
export interface ContentPart {
  type: string;
  text?: string;
  image_url?: { url: string; detail?: string };
}

export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | ContentPart[] | null;
  name?: string;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/**
 * POST /chat/completions. A host of this format gets the body whole (`response_format`, `logprobs`,
 * `seed`, unknown fields…); one choice a request (`n` above 1 is refused: the hold covers one).
 */
export interface ChatCompletionRequest {
  model: string;
  messages: ChatMessage[];
  tools?: Array<{ type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown> } }>;
  tool_choice?: ToolChoice | null;
  parallel_tool_calls?: boolean | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null } | null;
  reasoning_effort?: string | null;
  /** Hosted web search (search models): no serving host runs it, so it is left out, and the reply says so. */
  web_search_options?: Record<string, unknown> | null;
  /** The standard tier only: the others are priced apart (priced-modes.ts). */
  service_tier?: 'auto' | 'default' | null;
  n?: number | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  /** `text`, `json_object` or `json_schema` (with `json_schema`); other types only the format's own hosts know. */
  response_format?: {
    type: string;
    json_schema?: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null };
  } | null;
}

const contentPart = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string' } },
  allOf: [
    {
      if: { properties: { type: { const: 'text' } } },
      then: { required: ['text'], properties: { text: { type: 'string' } } },
    },
    {
      if: { properties: { type: { const: 'image_url' } } },
      then: {
        required: ['image_url'],
        properties: { image_url: { type: 'object', required: ['url'], properties: { url: { type: 'string' } } } },
      },
    },
  ],
};

const message = {
  type: 'object',
  required: ['role'],
  properties: {
    role: { enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
    content: {
      'x-message': 'must be a string or an array of content parts ({"type": "text", "text": "…"})',
      anyOf: [{ type: ['string', 'null'] }, { type: 'array', items: contentPart }],
    },
    name: { type: 'string' },
    tool_calls: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'type', 'function'],
        properties: {
          id: { type: 'string' },
          type: { const: 'function' },
          function: {
            type: 'object',
            required: ['name', 'arguments'],
            properties: { name: { type: 'string' }, arguments: { type: 'string' } },
          },
        },
      },
    },
    tool_call_id: { type: 'string' },
  },
};

const tool = {
  type: 'object',
  required: ['type', 'function'],
  properties: {
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name'],
      properties: { name: nonEmptyString, description: { type: 'string' }, parameters: object },
    },
  },
};

export const chatCompletionRequestSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model: modelReference,
    messages: { type: 'array', minItems: 1, items: message },
    tools: { type: 'array', maxItems: 128, items: tool },
    tool_choice: {
      'x-message': 'must be "auto", "none", "required" or {"type": "function", "function": {"name": "…"}}',
      anyOf: [
        { enum: ['auto', 'none', 'required', null] },
        {
          type: 'object',
          required: ['type', 'function'],
          properties: {
            type: { const: 'function' },
            function: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
          },
        },
      ],
    },
    parallel_tool_calls: optionalBoolean,
    max_tokens: integerFrom(1),
    max_completion_tokens: integerFrom(1),
    temperature: numberBetween(0, 2),
    top_p: numberBetween(0, 1),
    stop: {
      'x-message': 'must be a string or an array of at most 4 strings',
      anyOf: [{ type: ['string', 'null'] }, { type: 'array', maxItems: 4, items: { type: 'string' } }],
    },
    stream: optionalBoolean,
    stream_options: { type: ['object', 'null'], properties: { include_usage: optionalBoolean } },
    n: {
      ...integerFrom(1),
      maximum: 1,
      'x-message': 'must be 1: one choice a request (the hold covers one); ask again for another',
    },
    logprobs: optionalBoolean,
    top_logprobs: { type: ['integer', 'null'], minimum: 0, maximum: 20 },
    response_format: {
      type: ['object', 'null'],
      required: ['type'],
      properties: { type: { type: 'string' } },
      // As OpenAI's reference has it: json_schema carries its own object, named (its schema optional).
      if: { type: 'object', properties: { type: { const: 'json_schema' } } },
      then: {
        required: ['json_schema'],
        properties: {
          json_schema: {
            type: 'object',
            required: ['name'],
            properties: { name: { type: 'string' }, description: { type: 'string' }, schema: object, strict: optionalBoolean },
          },
        },
      },
    },
    reasoning_effort: { type: ['string', 'null'] },
    web_search_options: { type: ['object', 'null'] },
    service_tier: standardServiceTier,
  },
};
