import fc from 'fast-check';

/**
 * What a broken or hostile upstream may send, for fuzzing the host decoders: random JSON, and
 * replies and stream messages of each format's shape with adversarial values where the format
 * has counts, strings and arrays (negative, fractional, huge, exponent-notation and
 * out-of-range numbers, strings, objects, nulls, prototype names).
 */

/** Number literals as JSON text may write them, JSON.stringify never would. */
const NUMBER_LITERALS = ['1e400', '-1e400', '1.5e2', '1.25e1', '1e12', '1E3', '-0', '0.5', '-5', '9007199254740993', '12', '0'];
const LITERAL = '§n§';

/** A value in an upstream's JSON where the decoder expects something else, or the right thing. */
export const adversarialValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...NUMBER_LITERALS).map((n) => LITERAL + n),
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(1e12, Number.MAX_SAFE_INTEGER, 2 ** 60),
  fc.string({ maxLength: 20 }),
  fc.constantFrom('__proto__', 'constructor', 'toString', 'stop', 'end_turn', 'tool_use', 'length', ''),
  fc.constant(null),
  fc.boolean(),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
);

const v = adversarialValue;
const optional = <T>(shape: { [K in keyof T]: fc.Arbitrary<T[K]> }) => fc.record(shape, { requiredKeys: [] });

/** A chat-completions usage object with adversarial counts, or any value where usage goes. */
const openaiUsage = fc.oneof(
  optional({
    prompt_tokens: v,
    completion_tokens: v,
    total_tokens: v,
    prompt_tokens_details: fc.oneof(v, optional({ cached_tokens: v, cache_write_tokens: v })),
    completion_tokens_details: fc.oneof(v, optional({ reasoning_tokens: v })),
  }),
  v,
);

const openaiToolCall = fc.oneof(
  optional({ index: v, id: v, type: v, function: fc.oneof(v, optional({ name: v, arguments: v })) }),
  v,
);

/** A chat-completions stream chunk's data or whole reply's body, as an object. */
const openaiObject = (part: 'delta' | 'message') =>
  optional({
    id: v,
    object: v,
    choices: fc.oneof(
      fc.array(
        fc.oneof(
          optional({
            index: v,
            [part]: fc.oneof(
              v,
              optional({
                role: v,
                content: v,
                reasoning_content: v,
                reasoning: v,
                tool_calls: fc.oneof(v, fc.array(openaiToolCall)),
              }),
            ),
            finish_reason: v,
          }),
          v,
        ),
        { maxLength: 2 },
      ),
      v,
    ),
    usage: openaiUsage,
    error: fc.oneof(v, optional({ message: v, type: v })),
  });

/** A Messages usage object with adversarial counts, or any value where usage goes. */
const anthropicUsage = fc.oneof(
  optional({
    input_tokens: v,
    output_tokens: v,
    cache_read_input_tokens: v,
    cache_creation_input_tokens: v,
    cache_creation: fc.oneof(v, optional({ ephemeral_5m_input_tokens: v, ephemeral_1h_input_tokens: v })),
  }),
  v,
);

const EVENT_TYPES = [
  'message_start',
  'content_block_start',
  'content_block_delta',
  'content_block_stop',
  'message_delta',
  'message_stop',
  'ping',
  'error',
] as const;

/** A Messages stream event's data. */
const anthropicEvent = optional({
  type: fc.oneof(fc.constantFrom(...EVENT_TYPES), v),
  index: v,
  message: fc.oneof(v, optional({ id: v, usage: anthropicUsage, content: v })),
  content_block: fc.oneof(
    v,
    optional({ type: fc.oneof(fc.constantFrom('text', 'tool_use', 'thinking'), v), id: v, name: v, input: v }),
  ),
  delta: fc.oneof(
    v,
    optional({
      type: fc.oneof(fc.constantFrom('text_delta', 'thinking_delta', 'signature_delta', 'input_json_delta'), v),
      text: v,
      thinking: v,
      signature: v,
      partial_json: v,
      stop_reason: v,
      stop_sequence: v,
    }),
  ),
  usage: anthropicUsage,
  error: fc.oneof(v, optional({ type: v, message: v })),
});

/** A whole Messages reply. */
const anthropicReply = optional({
  type: fc.oneof(fc.constantFrom('message', 'error'), v),
  content: fc.oneof(
    v,
    fc.array(
      fc.oneof(
        optional({
          type: fc.oneof(fc.constantFrom('text', 'thinking', 'tool_use'), v),
          text: v,
          thinking: v,
          signature: v,
          id: v,
          name: v,
          input: v,
        }),
        v,
      ),
      { maxLength: 3 },
    ),
  ),
  stop_reason: v,
  stop_sequence: v,
  usage: anthropicUsage,
  error: v,
});

/** A Responses usage object with adversarial counts, or any value where usage goes. */
const responsesUsage = fc.oneof(
  optional({
    input_tokens: v,
    output_tokens: v,
    total_tokens: v,
    input_tokens_details: fc.oneof(v, optional({ cached_tokens: v, cache_write_tokens: v })),
    output_tokens_details: fc.oneof(v, optional({ reasoning_tokens: v })),
  }),
  v,
);

/** A Responses output item: a message, reasoning or a function call, with adversarial fields. */
const responsesItem = fc.oneof(
  optional({
    type: fc.oneof(fc.constantFrom('message', 'reasoning', 'function_call'), v),
    id: v,
    call_id: v,
    name: v,
    arguments: v,
    summary: fc.oneof(v, fc.array(fc.oneof(optional({ type: v, text: v }), v), { maxLength: 2 })),
    content: fc.oneof(
      v,
      fc.array(fc.oneof(optional({ type: fc.oneof(fc.constantFrom('output_text', 'refusal'), v), text: v, refusal: v }), v), {
        maxLength: 2,
      }),
    ),
    encrypted_content: v,
  }),
  v,
);

/** A Responses response object: a whole reply, or what a stream's first and last events carry. */
const responsesObject = optional({
  id: v,
  object: v,
  status: fc.oneof(fc.constantFrom('completed', 'incomplete', 'failed', 'in_progress'), v),
  incomplete_details: fc.oneof(v, optional({ reason: fc.oneof(fc.constantFrom('max_output_tokens', 'content_filter'), v) })),
  output: fc.oneof(v, fc.array(responsesItem, { maxLength: 3 })),
  usage: responsesUsage,
  error: fc.oneof(v, optional({ code: v, message: v })),
});

const RESPONSES_EVENT_TYPES = [
  'response.created',
  'response.in_progress',
  'response.output_item.added',
  'response.output_item.done',
  'response.content_part.added',
  'response.output_text.delta',
  'response.refusal.delta',
  'response.reasoning_summary_text.delta',
  'response.reasoning_text.delta',
  'response.function_call_arguments.delta',
  'response.completed',
  'response.incomplete',
  'response.failed',
  'error',
] as const;

/** A Responses stream event's data. */
const responsesEvent = optional({
  type: fc.oneof(fc.constantFrom(...RESPONSES_EVENT_TYPES), v),
  sequence_number: v,
  output_index: fc.oneof(fc.nat(3), v),
  item_id: v,
  delta: v,
  item: responsesItem,
  response: fc.oneof(v, responsesObject),
  code: v,
  message: v,
});

/** A Converse usage object with adversarial counts (and TTL splits), or any value where usage goes. */
const converseUsage = fc.oneof(
  optional({
    inputTokens: v,
    outputTokens: v,
    totalTokens: v,
    cacheReadInputTokens: v,
    cacheWriteInputTokens: v,
    cacheDetails: fc.oneof(
      v,
      fc.array(fc.oneof(optional({ ttl: fc.oneof(fc.constantFrom('5m', '1h'), v), inputTokens: v }), v), { maxLength: 3 }),
    ),
  }),
  v,
);

/** A Converse content block: text, a tool use, reasoning (or redacted), with adversarial fields. */
const converseBlock = fc.oneof(
  optional({
    text: v,
    toolUse: fc.oneof(v, optional({ toolUseId: v, name: v, input: v })),
    reasoningContent: fc.oneof(
      v,
      optional({ reasoningText: fc.oneof(v, optional({ text: v, signature: v })), redactedContent: v }),
    ),
  }),
  v,
);

/** A whole Converse reply. */
const converseReply = optional({
  output: fc.oneof(
    v,
    optional({ message: fc.oneof(v, optional({ role: v, content: fc.oneof(v, fc.array(converseBlock, { maxLength: 3 })) })) }),
  ),
  stopReason: fc.oneof(fc.constantFrom('end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'guardrail_intervened'), v),
  additionalModelResponseFields: fc.oneof(v, optional({ stop_sequence: v })),
  usage: converseUsage,
  metrics: v,
});

const CONVERSE_EVENT_TYPES = [
  'messageStart',
  'contentBlockStart',
  'contentBlockDelta',
  'contentBlockStop',
  'messageStop',
  'metadata',
  'throttlingException',
  'modelStreamErrorException',
] as const;

/** A ConverseStream event's payload. */
const converseEvent = optional({
  role: v,
  contentBlockIndex: fc.oneof(fc.nat(3), v),
  start: fc.oneof(v, optional({ toolUse: fc.oneof(v, optional({ toolUseId: v, name: v })) })),
  delta: fc.oneof(
    v,
    optional({
      text: v,
      toolUse: fc.oneof(v, optional({ input: v })),
      reasoningContent: fc.oneof(v, optional({ text: v, signature: v, redactedContent: v })),
    }),
  ),
  stopReason: fc.oneof(fc.constantFrom('end_turn', 'tool_use', 'max_tokens'), v),
  additionalModelResponseFields: v,
  usage: converseUsage,
  metrics: v,
  message: v,
});

/** A Gemini `usageMetadata` with adversarial counts, or any value where it goes. */
const geminiUsage = fc.oneof(
  optional({
    promptTokenCount: v,
    candidatesTokenCount: v,
    totalTokenCount: v,
    cachedContentTokenCount: v,
    thoughtsTokenCount: v,
    toolUsePromptTokenCount: v,
  }),
  v,
);

/** A Gemini part: text, a thought, a call, with adversarial fields. */
const geminiPart = fc.oneof(
  optional({
    text: v,
    thought: fc.oneof(fc.boolean(), v),
    thoughtSignature: v,
    functionCall: fc.oneof(v, optional({ id: v, name: v, args: v })),
  }),
  v,
);

/** A Gemini `GenerateContentResponse`: a whole reply, or one chunk of a stream. */
const geminiResponse = optional({
  candidates: fc.oneof(
    v,
    fc.array(
      fc.oneof(
        optional({
          content: fc.oneof(v, optional({ role: v, parts: fc.oneof(v, fc.array(geminiPart, { maxLength: 3 })) })),
          finishReason: fc.oneof(fc.constantFrom('STOP', 'MAX_TOKENS', 'SAFETY', 'MALFORMED_FUNCTION_CALL'), v),
          groundingMetadata: fc.oneof(v, optional({ webSearchQueries: v })),
        }),
        v,
      ),
      { maxLength: 2 },
    ),
  ),
  promptFeedback: fc.oneof(v, optional({ blockReason: v })),
  usageMetadata: geminiUsage,
  responseId: v,
  error: fc.oneof(v, optional({ code: v, message: v, status: v })),
});

/** JSON text of a value, with the number literals put in as written. */
const toJson = (value: unknown): string =>
  JSON.stringify(value).replace(new RegExp(`"${LITERAL}([^"]*)"`, 'g'), (_match, literal: string) => literal);

/** Text an upstream may send where JSON is expected: JSON of the format's shape, any JSON, or not JSON. */
const dataOf = (shaped: fc.Arbitrary<unknown>): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 6, arbitrary: shaped.map(toJson) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
    { weight: 1, arbitrary: fc.constantFrom('[DONE]', '{', 'null', '"text"', '[]', '{"type":"message_stop"}') },
  );

export type HostKindName = 'openai' | 'anthropic' | 'openai-responses' | 'bedrock' | 'gemini';

/**
 * A Bedrock stream's message as its framing gives it: a ConverseStream event, an exception, or an
 * InvokeModel `chunk` whose `bytes` hold an event of Anthropic's stream (or anything, in base64).
 */
const bedrockMessage: fc.Arbitrary<FuzzMessage> = fc.oneof(
  fc.record({
    event: fc.oneof(fc.constantFrom(...CONVERSE_EVENT_TYPES), fc.string({ maxLength: 10 })),
    data: dataOf(converseEvent),
  }),
  fc.record({
    event: fc.constant('chunk'),
    data: fc.oneof(
      dataOf(anthropicEvent).map((inner) => JSON.stringify({ bytes: Buffer.from(inner).toString('base64'), p: 'abc' })),
      dataOf(optional({ bytes: v })),
    ),
  }),
);

/** One stream message: an optional event name and its data. */
export interface FuzzMessage {
  event?: string;
  data: string;
}

export const streamMessages = (kind: HostKindName): fc.Arbitrary<FuzzMessage[]> =>
  fc.array(
    kind === 'bedrock'
      ? bedrockMessage
      : kind === 'openai' || kind === 'gemini'
        ? fc.record({ data: dataOf(kind === 'openai' ? openaiObject('delta') : geminiResponse) })
        : fc.record(
            kind === 'anthropic'
              ? { event: fc.oneof(fc.constantFrom(...EVENT_TYPES), fc.string({ maxLength: 10 })), data: dataOf(anthropicEvent) }
              : {
                  event: fc.oneof(fc.constantFrom(...RESPONSES_EVENT_TYPES), fc.string({ maxLength: 10 })),
                  data: dataOf(responsesEvent),
                },
            { requiredKeys: ['data'] },
          ),
    { maxLength: 12 },
  );

export const wholeReply = (kind: HostKindName): fc.Arbitrary<string> =>
  kind === 'bedrock'
    ? fc.oneof(dataOf(converseReply), dataOf(anthropicReply))
    : dataOf(
        kind === 'openai'
          ? openaiObject('message')
          : kind === 'anthropic'
            ? anthropicReply
            : kind === 'gemini'
              ? geminiResponse
              : responsesObject,
      );

/** How each format ends a stream. */
const TERMINATORS: Record<HostKindName, string> = {
  openai: 'data: [DONE]\n\n',
  anthropic: 'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  'openai-responses': 'event: response.completed\ndata: {"type":"response.completed","response":{"status":"completed"}}\n\n',
  // Bedrock's streams are not server-sent events (see fakes/bedrock.ts): no SSE text is made of them.
  bedrock: '',
  // Gemini has no end marker: a chunk with a finish and its usage completes the stream.
  gemini:
    'data: {"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"totalTokenCount":1}}\n\n',
};

/** A stream as SSE text; `terminated` ends it as the format does (so that some streams complete). */
export const sseText = (messages: FuzzMessage[], kind: HostKindName, terminated: boolean): string =>
  messages
    .map((m) => `${m.event !== undefined ? `event: ${m.event.replace(/[\r\n]/g, '')}\n` : ''}${sseDataLines(m.data)}\n`)
    .join('') + (terminated ? TERMINATORS[kind] : '');

/** Data as SSE lines (a line break inside data starts another `data:` line, as the format has it). */
const sseDataLines = (data: string): string =>
  data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}\n`)
    .join('');
