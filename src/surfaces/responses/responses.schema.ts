import { toolTypeSchema } from '../../canonical/hosted-tools';
import { integerFrom, modelReference, nonEmptyString, numberBetween, optionalBoolean } from '../../http/schema-validation';
import { standardServiceTier } from '../priced-modes';

/**
 * A content part of an input message. Text parts carry text; `input_image` a URL (https or data);
 * other types are refused by the translation, which names them.
 */
export interface ContentPart {
  type: string;
  text?: string;
  refusal?: string;
  image_url?: string | null;
  file_id?: string | null;
  detail?: string | null;
}

/** A message: `type` may be left out, as the format's short form does. */
export interface MessageItem {
  type?: 'message';
  role: 'user' | 'assistant' | 'system' | 'developer';
  content: string | ContentPart[];
}

export interface FunctionCallItem {
  type: 'function_call';
  call_id: string;
  name: string;
  /** The namespace tool the function belongs to, when it does. */
  namespace?: string | null;
  arguments: string;
}

export interface FunctionCallOutputItem {
  type: 'function_call_output';
  call_id: string;
  output: string | ContentPart[];
}

/** A reasoning item from an earlier reply, sent back: accepted, with no canonical counterpart. */
export interface ReasoningItem {
  type: 'reasoning';
}

/**
 * Hosted tools' calls from an earlier reply (`web_search_call`…) are accepted as reasoning items are;
 * other item types (item_reference, client-run built-in tools' calls, …) are refused by the
 * translation, which names them.
 */
export type InputItem = MessageItem | FunctionCallItem | FunctionCallOutputItem | ReasoningItem | { type: string };

export interface FunctionTool {
  type: 'function';
  name: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
}

/** Function tools grouped under a name (`multi_agent.spawn_agent`); the model calls them with `namespace` set. */
export interface NamespaceTool {
  type: 'namespace';
  name: string;
  description?: string | null;
  /** Function tools; other types (custom) are refused by the translation, which names them. */
  tools: Array<FunctionTool | { type: string; name: string }>;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: string; name?: string };

/** `text.format`: text, JSON mode, or JSON that a named schema describes (structured outputs). */
export type TextFormat =
  | { type: 'text' | 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; description?: string; strict?: boolean | null };

export type ReasoningEffortParam = 'none' | 'minimal' | 'low' | 'medium' | 'high';

/**
 * POST /responses. Fields without a canonical counterpart (`parallel_tool_calls`,
 * `reasoning.summary`, `metadata`, `user`, `include`, `prompt_cache_key`, …) are accepted when
 * well-typed and echoed in the reply where the format has a place for them; unknown fields are
 * ignored. `previous_response_id`, `conversation`, `prompt` and `background` need stored state:
 * the translation refuses them.
 */
export interface ResponsesRequest {
  model: string;
  input: string | InputItem[];
  instructions?: string | null;
  tools?: Array<FunctionTool | NamespaceTool | { type: string }> | null;
  tool_choice?: ToolChoice | null;
  parallel_tool_calls?: boolean | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  reasoning?: { effort?: ReasoningEffortParam | null; summary?: string | null } | null;
  text?: { format?: TextFormat | null; verbosity?: string | null } | null;
  metadata?: Record<string, string> | null;
  stream?: boolean | null;
  store?: boolean | null;
  include?: string[] | null;
  user?: string | null;
  safety_identifier?: string | null;
  prompt_cache_key?: string | null;
  truncation?: 'auto' | 'disabled' | null;
  previous_response_id?: string | null;
  conversation?: string | { id: string } | null;
  prompt?: Record<string, unknown> | null;
  background?: boolean | null;
  /** The standard tier only: the others are priced apart (priced-modes.ts). */
  service_tier?: 'auto' | 'default' | null;
}

const optionalString = { type: ['string', 'null'] };

/** An object whose `type` is `kind` must match `then` (`kind` "message" also when `type` is left out). */
const when = (kind: string, then: Record<string, unknown>) =>
  kind === 'message'
    ? { if: { properties: { type: { const: kind } } }, then }
    : { if: { required: ['type'], properties: { type: { const: kind } } }, then };

const contentPart = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string' } },
  allOf: [
    when('input_text', { required: ['text'], properties: { text: { type: 'string' } } }),
    when('output_text', { required: ['text'], properties: { text: { type: 'string' } } }),
    when('refusal', { required: ['refusal'], properties: { refusal: { type: 'string' } } }),
    when('input_image', {
      properties: { image_url: optionalString, file_id: optionalString, detail: optionalString },
    }),
  ],
};

/** A string, or parts (`items` applies to an array only): a bad part is named by its own path. */
const content = { type: ['string', 'array'], items: contentPart };

const inputItem = {
  type: 'object',
  properties: { type: { type: 'string' } },
  allOf: [
    when('message', {
      required: ['role', 'content'],
      properties: { role: { enum: ['user', 'assistant', 'system', 'developer'] }, content },
    }),
    when('function_call', {
      required: ['call_id', 'name', 'arguments'],
      properties: {
        call_id: nonEmptyString,
        name: nonEmptyString,
        namespace: optionalString,
        arguments: { type: 'string' },
      },
    }),
    when('function_call_output', {
      required: ['call_id', 'output'],
      properties: { call_id: nonEmptyString, output: content },
    }),
  ],
};

const functionTool = {
  required: ['name'],
  properties: {
    name: nonEmptyString,
    description: optionalString,
    parameters: { type: ['object', 'null'] },
    strict: optionalBoolean,
  },
};

const tool = {
  type: 'object',
  required: ['type'],
  properties: { type: toolTypeSchema },
  allOf: [
    when('function', functionTool),
    when('namespace', {
      required: ['name', 'tools'],
      properties: {
        name: nonEmptyString,
        description: optionalString,
        tools: {
          type: 'array',
          items: {
            type: 'object',
            required: ['type', 'name'],
            properties: { type: toolTypeSchema, name: nonEmptyString },
            allOf: [when('function', functionTool)],
          },
        },
      },
    }),
  ],
};

export const responsesRequestSchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: modelReference,
    input: { type: ['string', 'array'], items: inputItem },
    instructions: optionalString,
    tools: { type: ['array', 'null'], maxItems: 128, items: tool },
    tool_choice: {
      'x-message': 'must be "auto", "none", "required" or {"type": "function", "name": "…"}',
      anyOf: [
        { enum: ['auto', 'none', 'required', null] },
        { type: 'object', required: ['type'], properties: { type: toolTypeSchema, name: { type: 'string' } } },
      ],
    },
    parallel_tool_calls: optionalBoolean,
    max_output_tokens: integerFrom(1),
    temperature: numberBetween(0, 2),
    top_p: numberBetween(0, 1),
    reasoning: {
      type: ['object', 'null'],
      properties: {
        effort: { enum: ['none', 'minimal', 'low', 'medium', 'high', null] },
        summary: { enum: ['auto', 'concise', 'detailed', null] },
      },
    },
    text: {
      type: ['object', 'null'],
      properties: {
        format: {
          type: ['object', 'null'],
          required: ['type'],
          properties: { type: { enum: ['text', 'json_object', 'json_schema'] } },
          // As OpenAI's reference has it: a json_schema format is named and carries its schema, beside its type.
          if: { type: 'object', properties: { type: { const: 'json_schema' } } },
          then: {
            required: ['name', 'schema'],
            properties: {
              name: { type: 'string' },
              schema: { type: 'object' },
              description: { type: 'string' },
              strict: optionalBoolean,
            },
          },
        },
        verbosity: { enum: ['low', 'medium', 'high', null] },
      },
    },
    metadata: { type: ['object', 'null'], additionalProperties: { type: 'string' } },
    stream: optionalBoolean,
    store: optionalBoolean,
    include: { type: ['array', 'null'], items: { type: 'string' } },
    user: optionalString,
    safety_identifier: optionalString,
    prompt_cache_key: optionalString,
    truncation: { enum: ['auto', 'disabled', null] },
    previous_response_id: optionalString,
    conversation: { type: ['string', 'object', 'null'] },
    prompt: { type: ['object', 'null'] },
    background: optionalBoolean,
    service_tier: standardServiceTier,
    top_logprobs: integerFrom(0),
    max_tool_calls: integerFrom(1),
    stream_options: { type: ['object', 'null'] },
  },
};
