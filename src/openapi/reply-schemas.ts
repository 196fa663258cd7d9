/**
 * JSON Schemas of what the API answers, for its OpenAPI document: the fields every reply of a
 * surface has. Replies may carry more (a host speaking the client's format has its own reply
 * passed on whole), so objects stay open; what is listed as required is always there.
 */

const string = { type: 'string' };
const integer = { type: 'integer', minimum: 0 };
const number = { type: 'number' };
const nullable = (schema: object) => ({ anyOf: [schema, { type: 'null' }] });
const object = (properties: Record<string, object>, required: string[] = Object.keys(properties)) => ({
  type: 'object',
  properties,
  required,
});
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
/**
 * An exact amount of nano-credits that may pass 2^53 (a sum, a lifetime's figure): a JSON integer
 * while it is a safe integer, beyond that its decimal digits as a string (never a float).
 */
const nanoSum = {
  description:
    'nano-credits (1e-9 credit), exact: an integer while within ±(2^53 − 1), beyond that its decimal digits as a string',
  anyOf: [{ type: 'integer' }, { type: 'string', pattern: '^-?[0-9]+$' }],
};

// --- errors, one format per surface --------------------------------------------------------

/** OpenAI's: chat completions, Responses, embeddings, the model list, the management API. */
const openAiError = object({ error: object({ message: string, type: string, param: nullable(string), code: string }) });
const messagesError = object({
  type: { const: 'error' },
  error: object({ type: string, message: string }),
  request_id: nullable(string),
});
const nativeError = object({ error: object({ code: string, message: string }) });
/** Google's, on the Gemini surface: `code` is the HTTP status, `status` its canonical name. */
const geminiError = object({ error: object({ code: { type: 'integer' }, message: string, status: string }) });
/** OpenRouter's, on its own routes (credits, the calling key, generations): `code` is the HTTP status. */
const openRouterError = object({ error: object({ code: { type: 'integer' }, message: string }) });

// --- chat completions ----------------------------------------------------------------------

const chatUsage = object({ prompt_tokens: integer, completion_tokens: integer, total_tokens: integer, cost: number }, [
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
]);
const toolCall = object({ id: string, type: { const: 'function' }, function: object({ name: string, arguments: string }) });
const chatCompletion = object(
  {
    id: string,
    object: { const: 'chat.completion' },
    created: integer,
    model: string,
    choices: {
      type: 'array',
      items: object(
        {
          index: integer,
          message: object(
            { role: { const: 'assistant' }, content: nullable(string), tool_calls: { type: 'array', items: toolCall } },
            ['role', 'content'],
          ),
          finish_reason: nullable(string),
        },
        ['index', 'message', 'finish_reason'],
      ),
    },
    usage: chatUsage,
  },
  ['id', 'object', 'created', 'model', 'choices', 'usage'],
);
const chatChunk = object(
  {
    id: string,
    object: { const: 'chat.completion.chunk' },
    created: integer,
    model: string,
    choices: {
      type: 'array',
      items: object({ index: integer, delta: { type: 'object' }, finish_reason: nullable(string) }, ['index', 'delta']),
    },
    usage: nullable(chatUsage),
    /** A failure after the stream started (the last chunk): the status the request would have had, and why. */
    error: object({ code: { type: 'integer' }, message: string, type: string }),
  },
  ['id', 'object', 'created', 'model', 'choices'],
);

// --- messages ------------------------------------------------------------------------------

const messagesUsage = object(
  {
    input_tokens: integer,
    output_tokens: integer,
    cache_read_input_tokens: nullable(integer),
    cache_creation_input_tokens: nullable(integer),
  },
  ['input_tokens', 'output_tokens'],
);
const contentBlock = { type: 'object', properties: { type: string }, required: ['type'] };
const message = object(
  {
    id: string,
    type: { const: 'message' },
    role: { const: 'assistant' },
    model: string,
    content: { type: 'array', items: contentBlock },
    stop_reason: nullable(string),
    stop_sequence: nullable(string),
    usage: messagesUsage,
  },
  ['id', 'type', 'role', 'model', 'content', 'stop_reason', 'usage'],
);
const messagesEvent = {
  oneOf: [
    object({ type: { const: 'message_start' }, message: { type: 'object', required: ['id', 'type', 'role', 'model', 'usage'] } }),
    object({ type: { const: 'ping' } }),
    object({ type: { const: 'content_block_start' }, index: integer, content_block: contentBlock }),
    object({ type: { const: 'content_block_delta' }, index: integer, delta: contentBlock }),
    object({ type: { const: 'content_block_stop' }, index: integer }),
    object({
      type: { const: 'message_delta' },
      delta: { type: 'object' },
      usage: { type: 'object', required: ['output_tokens'] },
    }),
    object({ type: { const: 'message_stop' } }),
    messagesError,
  ],
};

// --- Responses -----------------------------------------------------------------------------

const responsesUsage = object(
  {
    input_tokens: integer,
    input_tokens_details: object({ cached_tokens: integer }),
    output_tokens: integer,
    output_tokens_details: object({ reasoning_tokens: integer }),
    total_tokens: integer,
    cost: number,
  },
  ['input_tokens', 'input_tokens_details', 'output_tokens', 'output_tokens_details', 'total_tokens'],
);
const response = object(
  {
    id: string,
    object: { const: 'response' },
    created_at: integer,
    status: { enum: ['in_progress', 'completed', 'incomplete', 'failed'] },
    error: nullable({ type: 'object' }),
    model: string,
    output: { type: 'array', items: { type: 'object', required: ['type'] } },
    /** Once counted: left out of a response in progress. */
    usage: responsesUsage,
  },
  ['id', 'object', 'created_at', 'status', 'error', 'model', 'output'],
);
const responsesEvent = {
  type: 'object',
  properties: { type: { type: 'string', pattern: '^(response\\.[a-z_.]+|error)$' }, sequence_number: integer },
  required: ['type', 'sequence_number'],
};

// --- native, embeddings, models, credits, health ---------------------------------------------

const nativeUsage = object({
  input_tokens: integer,
  output_tokens: integer,
  cache_read_tokens: integer,
  cache_write_tokens: integer,
});
const nativeReply = object({
  id: string,
  model: string,
  text: string,
  finish_reason: string,
  usage: nativeUsage,
  cost: nullable(number),
  cost_nano: nullable(integer),
  ledger_position: nullable(integer),
});
const nativeEvent = {
  oneOf: [
    object({ id: string, model: string }),
    object({ text: string }),
    object({
      finish_reason: string,
      usage: nativeUsage,
      cost: nullable(number),
      cost_nano: nullable(integer),
      ledger_position: nullable(integer),
    }),
    nativeError,
  ],
};

const embeddings = object({
  object: { const: 'list' },
  model: string,
  data: {
    type: 'array',
    items: object({
      object: { const: 'embedding' },
      index: integer,
      embedding: { anyOf: [{ type: 'array', items: number }, string] },
    }),
  },
  usage: object({ prompt_tokens: integer, total_tokens: integer, cost: number }),
});

const model = object(
  {
    id: string,
    object: { const: 'model' },
    kind: { enum: ['chat', 'embedding'] },
    created: integer,
    owned_by: string,
    name: string,
    uuid: string,
    context_length: integer,
    max_output_tokens: nullable(integer),
    pricing: { type: 'object' },
    // Per-use prices of the hosted tools its host runs (`web_search`…, US dollars per 1,000 uses), when it prices any.
    hosted_tool_pricing: { type: 'object', additionalProperties: string },
  },
  ['id', 'object', 'kind', 'name', 'uuid', 'context_length', 'pricing'],
);

/** A model as Anthropic's Models API describes one (`ModelInfo`), for its SDKs (`anthropic-version` sent). */
const anthropicModel = object(
  {
    type: { const: 'model' },
    id: string,
    display_name: string,
    created_at: { type: 'string', format: 'date-time' },
    max_input_tokens: integer,
    max_tokens: integer,
  },
  ['type', 'id', 'display_name', 'created_at'],
);

const resets = { enum: ['never', 'daily', 'weekly', 'monthly'] };
const perMinute = nullable(integer);
const time = { type: 'string', description: 'an ISO 8601 time, UTC' };

/** A key as the management API shows it (never its secret). */
/** An organization's alerts as the management API shows them (credits as decimal text; null: that alert off). */
const alerts = object({
  url: string,
  balance_below: nullable(string),
  day_spend_above: nullable(string),
  key_limits: { type: 'boolean' },
  secret_issued_at: string,
  configured_at: string,
});
const webhookSecret = { type: 'string', pattern: '^whsec_' };

const managedKey = object({
  id: string,
  name: string,
  label: string,
  status: { enum: ['active', 'disabled', 'expired', 'revoked'] },
  usage: number,
  rate_limits: nullable(object({ requests_per_minute: perMinute, tokens_per_minute: perMinute })),
  limit: nullable(number),
  limit_reset: nullable(resets),
  expires_at: nullable(time),
  created_at: time,
  last_used_at: nullable(time),
});

const boolean = { type: 'boolean' };

/** The calling key, as GET /api/v1/key shows it: OpenRouter's fields, and ours. */
const keyInfo = object({
  id: string,
  name: string,
  label: string,
  usage: number,
  usage_daily: number,
  usage_weekly: number,
  usage_monthly: number,
  byok_usage: number,
  byok_usage_daily: number,
  byok_usage_weekly: number,
  byok_usage_monthly: number,
  include_byok_in_limit: boolean,
  is_free_tier: boolean,
  is_management_key: boolean,
  is_provisioning_key: boolean,
  creator_user_id: nullable(string),
  limit: nullable(number),
  limit_reset: nullable(resets),
  limit_usage: nullable(number),
  limit_remaining: nullable(number),
  rate_limit: object({ requests: { type: 'integer' }, interval: string, note: string }),
  rate_limits: nullable(
    object({ requests_per_minute: perMinute, tokens_per_minute: perMinute, source: { enum: ['key', 'organization'] } }),
  ),
  expires_at: nullable(time),
  created_at: time,
});

const provenance = { enum: ['host', 'gateway_estimate'] };
const generation = object({
  id: string,
  reservation_id: nullable(string),
  created_at: time,
  surface: string,
  model: string,
  host: nullable(string),
  key_id: string,
  status: {
    type: 'string',
    description:
      'how the request ended: `ok`; `client_abort` (its client left); `shutdown` (still open when the gateway shutting down ended its grace period; recorded as `client_abort` before 2026-11-28); `provider_error`; `provider_timeout`; `internal_error`; `expired` (never settled: a crash); or the code a refusal was answered with',
  },
  latency_ms: nullable(integer),
  tokens: object({ input: integer, cache_read: integer, cache_write: integer, output: integer }),
  // Uses of hosted tools billed, by class (`web_search`…): {} when none.
  hosted_tool_uses: { type: 'object', additionalProperties: integer },
  cost: number,
  cost_nano: integer,
  // What credit notes refunded of it, and what remains charged.
  refunded: number,
  refunded_nano: integer,
  net_cost: number,
  provenance: object({
    input: provenance,
    cache_read: provenance,
    cache_write: provenance,
    cache_write_1h: provenance,
    output: provenance,
  }),
  total_cost: number,
  usage: number,
  request_id: string,
  upstream_id: nullable(string),
  omitted_tools: { type: 'array', items: string },
  attempts: {
    type: 'array',
    items: object({
      host: string,
      credential: nullable(string),
      status: nullable(integer),
      reason: {
        type: 'string',
        description:
          '`ok`, `rate_limited`, `server_error`, `rejected`, `connection`, `timeout`, `malformed`, `upstream_error`, `circuit_open`, `client_abort`, `shutdown` or `deadline`',
      },
      duration_ms: integer,
    }),
  },
  catalogue_version: nullable(string),
  provider_name: nullable(string),
  latency: nullable(integer),
  tokens_prompt: integer,
  tokens_completion: integer,
  native_tokens_prompt: integer,
  native_tokens_completion: integer,
  native_tokens_cached: integer,
  is_byok: boolean,
});

// --- Gemini ---------------------------------------------------------------------------------

const geminiPart = {
  type: 'object',
  properties: {
    text: string,
    thought: { type: 'boolean' },
    thoughtSignature: string,
    functionCall: object({ id: string, name: string, args: { type: 'object' } }, ['name']),
  },
};
const usageMetadata = object(
  {
    promptTokenCount: integer,
    cachedContentTokenCount: integer,
    candidatesTokenCount: integer,
    thoughtsTokenCount: integer,
    totalTokenCount: integer,
    promptTokensDetails: { type: 'array', items: object({ modality: string, tokenCount: integer }) },
  },
  ['promptTokenCount', 'candidatesTokenCount', 'totalTokenCount'],
);
/** A reply, or one chunk of a streamed one: only the last chunk has the finish reason and the usage. */
const generateContentResponse = {
  oneOf: [
    object(
      {
        candidates: {
          type: 'array',
          items: object(
            {
              content: object({ role: { const: 'model' }, parts: { type: 'array', items: geminiPart } }),
              finishReason: string,
              index: integer,
            },
            ['content', 'index'],
          ),
        },
        usageMetadata,
        modelVersion: string,
        responseId: string,
      },
      ['candidates', 'modelVersion', 'responseId'],
    ),
    geminiError,
  ],
};
const geminiModel = object(
  {
    name: { type: 'string', pattern: '^models/' },
    baseModelId: string,
    version: string,
    displayName: string,
    description: string,
    inputTokenLimit: integer,
    outputTokenLimit: integer,
    supportedGenerationMethods: { type: 'array', items: string },
    thinking: { type: 'boolean' },
  },
  ['name', 'displayName', 'inputTokenLimit', 'outputTokenLimit', 'supportedGenerationMethods'],
);

export const REPLY_SCHEMAS = {
  ChatError: openAiError,
  MessagesError: messagesError,
  ResponsesError: openAiError,
  NativeError: nativeError,
  GeminiError: geminiError,
  OpenRouterError: openRouterError,
  ChatCompletion: chatCompletion,
  ChatCompletionChunk: chatChunk,
  Message: message,
  MessagesStreamEvent: messagesEvent,
  CountTokens: object({ input_tokens: integer }),
  Response: response,
  ResponsesStreamEvent: responsesEvent,
  NativeReply: nativeReply,
  NativeStreamEvent: nativeEvent,
  Embeddings: embeddings,
  GenerateContentResponse: generateContentResponse,
  GeminiCountTokens: object({ totalTokens: integer }),
  GeminiModel: geminiModel,
  GeminiModelList: object({ models: { type: 'array', items: ref('GeminiModel') } }),
  Model: model,
  ModelList: object({ object: { const: 'list' }, data: { type: 'array', items: ref('Model') } }),
  AnthropicModel: anthropicModel,
  AnthropicModelList: object({
    data: { type: 'array', items: ref('AnthropicModel') },
    has_more: { type: 'boolean' },
    first_id: nullable(string),
    last_id: nullable(string),
  }),
  Credits: object({
    data: object({
      total_credits: number,
      total_usage: number,
      reserved: number,
      available: number,
      total_credits_nano: nanoSum,
      total_usage_nano: nanoSum,
      reserved_nano: nanoSum,
      available_nano: nanoSum,
    }),
  }),
  Readiness: object({ ready: { type: 'boolean' }, reasons: { type: 'array', items: string } }),
  KeyInfo: object({ data: keyInfo }),
  Generation: object({ data: generation }),
  ManagedKey: object({ data: managedKey }),
  ManagedKeyCreated: object({ data: managedKey, key: { type: 'string', pattern: '^sk-svc-' } }),
  ManagedKeyList: object({ data: { type: 'array', items: managedKey } }),
  Alerts: object({ data: alerts }),
  AlertsSet: object({ data: alerts, secret: webhookSecret }, ['data']),
  AlertsSecret: object({ secret: webhookSecret }),
  AlertTest: object({ alert_id: string }),
  CreditNote: object({
    data: object(
      {
        id: string,
        kind: { enum: ['refund', 'adjustment'] },
        generation: nullable(string),
        key_id: nullable(string),
        amount: number,
        amount_nano: { type: 'integer' },
        reason: { enum: ['dispute', 'provider_outage', 'goodwill', 'correction', 'other'] },
        memo: nullable(string),
        idempotency_key: string,
        issued_by: string,
        issued_at: time,
        already_issued: boolean,
      },
      [
        'id',
        'kind',
        'generation',
        'key_id',
        'amount',
        'amount_nano',
        'reason',
        'memo',
        'idempotency_key',
        'issued_by',
        'issued_at',
      ],
    ),
  }),
};
