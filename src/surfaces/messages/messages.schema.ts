import { toolTypeSchema } from '../../canonical/hosted-tools';
import {
  integerFrom,
  modelReference,
  nonEmptyString,
  numberBetween,
  object,
  optionalBoolean,
} from '../../http/schema-validation';
import { globalInferenceGeo, standardSpeed } from '../priced-modes';

export interface TextBlock {
  type: 'text';
  text: string;
}
export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}
export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<{ type: string; text?: string }>;
  is_error?: boolean;
}
export interface ImageBlock {
  type: 'image';
  source: { type: string; media_type?: string; data?: string; url?: string };
}
/**
 * Other block types (document, thinking, server tools, …) reach hosts of this format whole;
 * across formats they have no counterpart (the README lists them).
 */
export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | ImageBlock | { type: string };

/**
 * A conversation entry. `system` entries (the `mid-conversation-system-2026-04-07` beta, which
 * agents such as Claude Code send) are instructions given at that point of the conversation.
 */
export type MessageParam =
  { role: 'user' | 'assistant'; content: string | ContentBlock[] } | { role: 'system'; content: string | TextBlock[] };

export interface MessagesRequest {
  model: string;
  max_tokens: number;
  messages: MessageParam[];
  system?: string | TextBlock[] | null;
  /** The client's tools (with a schema), and server tools (a `type` such as `web_search_20250305`, run by the host). */
  tools?: Array<{ type?: string; name: string; description?: string; input_schema?: Record<string, unknown> }>;
  tool_choice?: { type: 'auto' | 'any' | 'tool' | 'none'; name?: string; disable_parallel_tool_use?: boolean | null } | null;
  stop_sequences?: string[] | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  stream?: boolean | null;
  /** `enabled` with a budget, `adaptive` (the model decides, at `output_config.effort`), or `disabled`. */
  thinking?: { type: string; budget_tokens?: number } | null;
  /** `effort` for adaptive thinking; `format`, the JSON the reply's text must be (structured outputs). */
  output_config?: { effort?: string; format?: JsonOutputFormat | null } | null;
  /** Standard speed and global inference only: the other modes are priced apart (priced-modes.ts). */
  speed?: 'standard' | null;
  inference_geo?: 'global' | null;
  /** The structured-outputs beta's name for `output_config.format` (`structured-outputs-2025-11-13`), still taken. */
  output_format?: JsonOutputFormat | null;
}

/** Structured outputs: the reply's text is JSON that the schema describes. */
export interface JsonOutputFormat {
  type: 'json_schema';
  schema: Record<string, unknown>;
}

/** POST /messages/count_tokens: a message request without its output cap (and not streamed). */
export type CountTokensRequest = Omit<MessagesRequest, 'max_tokens' | 'stream'>;

/** `output_config.format` as the Messages API takes it: json_schema, with its schema. */
const jsonOutputFormat = {
  type: ['object', 'null'],
  required: ['type', 'schema'],
  properties: { type: { const: 'json_schema' }, schema: object },
};

/** A block whose `type` is `kind` must carry `then`'s fields. */
const when = (kind: string, then: Record<string, unknown>) => ({ if: { properties: { type: { const: kind } } }, then });

const contentBlock = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string' } },
  // Other block types (document, thinking, …) are carried whole to hosts of this format.
  allOf: [
    when('image', {
      required: ['source'],
      properties: { source: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } } },
    }),
    when('text', { required: ['text'], properties: { text: { type: 'string' } } }),
    when('tool_use', {
      required: ['id', 'name', 'input'],
      properties: { id: { type: 'string' }, name: { type: 'string' }, input: object },
    }),
    when('tool_result', {
      required: ['tool_use_id'],
      // Its content: text, or blocks (text, image) that are objects with a type.
      properties: {
        tool_use_id: { type: 'string' },
        content: {
          type: ['string', 'array'],
          items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
        },
      },
    }),
  ],
};

const textBlocks = {
  type: 'array',
  items: {
    type: 'object',
    required: ['type', 'text'],
    properties: { type: { const: 'text' }, text: { type: 'string' } },
  },
};

const message = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { enum: ['user', 'assistant', 'system'] },
    content: {
      'x-message':
        'must be a string or an array of content blocks (text blocks need "text"; tool_use blocks "id", "name" and an object "input"; tool_result blocks "tool_use_id")',
      anyOf: [{ type: 'string' }, { type: 'array', items: contentBlock }],
    },
  },
  if: { properties: { role: { const: 'system' } } },
  then: {
    properties: {
      content: {
        'x-message': 'must be a string or an array of text blocks in a system message',
        anyOf: [{ type: 'string' }, textBlocks],
      },
    },
  },
};

/** The body of POST /messages/count_tokens: a message request's fields but its output cap. Unknown fields are ignored. */
export const countTokensRequestSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model: modelReference,
    messages: { type: 'array', minItems: 1, items: message },
    system: {
      'x-message': 'must be a string or an array of text blocks',
      anyOf: [{ type: ['string', 'null'] }, textBlocks],
    },
    tools: {
      type: 'array',
      maxItems: 128,
      items: {
        type: 'object',
        required: ['name'],
        properties: { type: toolTypeSchema, name: nonEmptyString, description: { type: 'string' }, input_schema: object },
        // A tool of the API's own (a server tool, or one the client runs: `bash_20250124`…) has no
        // schema, the model knows it; the client's custom tools need one.
        if: { required: ['type'], properties: { type: { type: 'string', not: { const: 'custom' } } } },
        else: { required: ['input_schema'], properties: { input_schema: object } },
      },
    },
    tool_choice: {
      type: ['object', 'null'],
      required: ['type'],
      properties: {
        type: { enum: ['auto', 'any', 'tool', 'none'] },
        name: { type: 'string' },
        disable_parallel_tool_use: optionalBoolean,
      },
    },
    thinking: {
      type: ['object', 'null'],
      required: ['type'],
      properties: { type: { type: 'string' }, budget_tokens: integerFrom(1) },
    },
    output_config: { type: ['object', 'null'], properties: { effort: { type: 'string' }, format: jsonOutputFormat } },
    output_format: jsonOutputFormat,
  },
};

/** POST /messages, the messages wire format. Unknown fields are ignored. */
export const messagesRequestSchema = {
  type: 'object',
  required: ['model', 'max_tokens', 'messages'],
  properties: {
    ...countTokensRequestSchema.properties,
    max_tokens: { type: 'integer', minimum: 1 },
    stop_sequences: { type: ['array', 'null'], items: { type: 'string' } },
    temperature: numberBetween(0, 1),
    top_p: numberBetween(0, 1),
    top_k: integerFrom(0),
    metadata: { type: ['object', 'null'] },
    stream: optionalBoolean,
    speed: standardSpeed,
    inference_geo: globalInferenceGeo,
    // Bedrock's place for betas: passed on in the body, it would reach Bedrock unseen by the rules
    // betas are held to (the 1M-context beta's price, admission.ts), and Anthropic's API refuses it.
    anthropic_beta: { not: {}, 'x-message': 'is not taken in the body: send betas in the anthropic-beta header' },
  },
};
