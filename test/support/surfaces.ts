/**
 * The gateway's client surfaces as a test calls them: each one's route, headers and body for a
 * model, and how to read what came back (text, reasoning, tool calls, an error) whole or streamed,
 * so that one test can run on every surface.
 */

/** A tool the surfaces offer when asked to: the weather in a city. */
export const WEATHER = {
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** What a client got, whatever its surface: text, reasoning, calls with their whole arguments. */
export interface Got {
  text: string;
  reasoning: string;
  /** The reasoning's signatures, on the surfaces that carry them (messages: its thinking blocks'; Gemini: its parts'). */
  signatures: string[];
  calls: Array<{ id: string; name: string; arguments: string }>;
  /** How many pieces the calls' arguments came in, streamed (a whole reply: 0). */
  argumentPieces: number;
  /** How the reply finished, in the surface's own words (its last word on it, streamed); null where it said nothing. */
  finish: string | null;
}

/** What a request asks for besides a user's "Hello" (and reasoning, on the surfaces that carry it). */
export interface Asked {
  /** Offer WEATHER. */
  tools?: boolean;
  /** An image (a `data:` URL) before the text, on the surfaces that carry images. */
  image?: string;
  /** The output cap, in the surface's own field (the messages surface always sends one: 4,096 unless given). */
  maxTokens?: number;
  /** The thinking budget, on the surfaces that ask for one by its size (messages, Gemini): 2,048 unless given. */
  thinkingBudget?: number;
}

/** The output tokens a reply reports to its client, and how many of them were reasoning. */
export interface ShownUsage {
  output: number;
  reasoning: number;
}

/** An error answer in a surface's own format: its type and message. */
export interface SurfaceError {
  type: string;
  message: string;
}

/**
 * A client format: by default one of the gateway's /api/v1 formats (SURFACES); `Surface<'gemini'>`
 * is Google's API (GENERATE_CONTENT), and `Surface<string>` any of them.
 */
export interface Surface<Name extends string = 'chat-completions' | 'messages' | 'responses' | 'native'> {
  name: Name;
  /** The surface carries tool calls and reasoning (native carries text only). */
  tools: boolean;
  /** The surface carries images to hosts (chat-completions drops image parts; native has none). */
  images: boolean;
  /** The API version its routes are under, below `/api`: v1 unless said. */
  version?: string;
  /** Its route for `slug`, below the version (Google's API names the model, and a stream, in the route). */
  path(slug: string, stream?: boolean): string;
  headers(key: string): Record<string, string>;
  body(slug: string, stream: boolean, asked?: Asked): Record<string, unknown>;
  read(body: string, stream: boolean): Got;
  /** The usage the reply shows (streamed: its last report); null where the surface shows none. */
  usage(body: string, stream: boolean): ShownUsage | null;
  error(body: string): SurfaceError;
  /** The error a stream ended with, in the surface's own format; null when it ended well. */
  streamError(body: string): SurfaceError | null;
}

/** The `data:` payloads of a server-sent event stream, with their event names. */
export function sseEvents(text: string): Array<{ event?: string; data: any }> {
  return text
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)![1];
      return { event, data: data === '[DONE]' ? data : JSON.parse(data) };
    });
}

/** The `data:` payloads of a server-sent event stream, parsed, its `[DONE]` left out. */
export const sseData = (text: string): any[] =>
  sseEvents(text)
    .map((e) => e.data)
    .filter((data) => data !== '[DONE]');

const got = (): Got => ({ text: '', reasoning: '', signatures: [], calls: [], argumentPieces: 0, finish: null });

/** OpenAI's error body (chat completions, Responses): `{error: {message, type, param, code}}`. */
const openAiError = (body: string): SurfaceError => {
  const { error } = JSON.parse(body);
  return { type: error.type, message: error.message };
};

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

export const CHAT_COMPLETIONS: Surface = {
  name: 'chat-completions',
  tools: true,
  images: false,
  path: () => 'chat/completions',
  headers: (key) => ({ authorization: `Bearer ${key}` }),
  body: (slug, stream, asked = {}) => ({
    model: slug,
    stream,
    reasoning_effort: 'low',
    ...(stream ? { stream_options: { include_usage: true } } : {}),
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello' },
    ],
    ...(asked.maxTokens !== undefined ? { max_tokens: asked.maxTokens } : {}),
    ...(asked.tools ? { tools: [{ type: 'function', function: WEATHER }] } : {}),
  }),
  read(body, stream) {
    const out = got();
    const choices = stream ? sseData(body).map((chunk) => chunk.choices?.[0] ?? {}) : [JSON.parse(body).choices[0]];
    for (const choice of choices) {
      const part = (stream ? choice.delta : choice.message) ?? {};
      out.finish = choice.finish_reason ?? out.finish;
      out.text += part.content ?? '';
      out.reasoning += part.reasoning_content ?? '';
      for (const [i, call] of (part.tool_calls ?? []).entries()) {
        const index = call.index ?? i;
        out.calls[index] ??= { id: call.id, name: call.function.name, arguments: '' };
        out.calls[index].arguments += call.function.arguments ?? '';
        if (stream && call.function.arguments) out.argumentPieces++;
      }
    }
    return out;
  },
  usage(body, stream) {
    const usage = stream
      ? sseEvents(body)
          .filter((e) => e.data !== '[DONE]' && e.data.usage)
          .at(-1)?.data.usage
      : JSON.parse(body).usage;
    return usage ? { output: usage.completion_tokens, reasoning: usage.completion_tokens_details?.reasoning_tokens ?? 0 } : null;
  },
  error: openAiError,
  streamError(body) {
    const error = sseEvents(body).find((e) => e.data !== '[DONE]' && e.data.error)?.data.error;
    return error ? { type: error.type, message: error.message } : null;
  },
};

export const MESSAGES: Surface = {
  name: 'messages',
  tools: true,
  images: true,
  path: () => 'messages',
  headers: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
  body: (slug, stream, asked = {}) => {
    const image = asked.image && DATA_URL.exec(asked.image);
    return {
      model: slug,
      stream,
      max_tokens: asked.maxTokens ?? 4096,
      thinking: { type: 'enabled', budget_tokens: asked.thinkingBudget ?? 2048 },
      system: 'Be brief.',
      messages: [
        {
          role: 'user',
          content: image
            ? [
                { type: 'image', source: { type: 'base64', media_type: image[1], data: image[2] } },
                { type: 'text', text: 'Hello' },
              ]
            : 'Hello',
        },
      ],
      ...(asked.tools
        ? { tools: [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters }] }
        : {}),
    };
  },
  read(body, stream) {
    const out = got();
    if (!stream) {
      const message = JSON.parse(body);
      out.finish = message.stop_reason;
      for (const block of message.content) {
        if (block.type === 'text') out.text += block.text;
        if (block.type === 'thinking') out.reasoning += block.thinking;
        if (block.type === 'thinking' && block.signature) out.signatures.push(block.signature);
        if (block.type === 'tool_use') out.calls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
      }
      return out;
    }
    const calls = new Map<number, Got['calls'][number]>();
    for (const { data } of sseEvents(body)) {
      if (data.type === 'message_delta') out.finish = data.delta.stop_reason ?? out.finish;
      if (data.type === 'content_block_start' && data.content_block.type === 'tool_use') {
        calls.set(data.index, { id: data.content_block.id, name: data.content_block.name, arguments: '' });
        out.calls.push(calls.get(data.index)!);
      }
      if (data.type !== 'content_block_delta') continue;
      out.text += data.delta.text ?? '';
      out.reasoning += data.delta.thinking ?? '';
      if (data.delta.type === 'signature_delta') out.signatures.push(data.delta.signature);
      if (data.delta.type === 'input_json_delta') {
        calls.get(data.index)!.arguments += data.delta.partial_json;
        out.argumentPieces++;
      }
    }
    return out;
  },
  usage(body, stream) {
    const usage = stream
      ? sseEvents(body)
          .filter((e) => e.data.type === 'message_delta')
          .at(-1)?.data.usage
      : JSON.parse(body).usage;
    return usage ? { output: usage.output_tokens, reasoning: usage.output_tokens_details?.thinking_tokens ?? 0 } : null;
  },
  error(body) {
    const { type, error } = JSON.parse(body);
    expect(type).toBe('error');
    return { type: error.type, message: error.message };
  },
  streamError(body) {
    const error = sseEvents(body).find((e) => e.data.type === 'error')?.data.error;
    return error ? { type: error.type, message: error.message } : null;
  },
};

/** How a Responses response finished: the reason it is incomplete, else its status. */
const finishOf = (response: any): string => response.incomplete_details?.reason ?? response.status;

export const RESPONSES: Surface = {
  name: 'responses',
  tools: true,
  images: true,
  path: () => 'responses',
  headers: (key) => ({ authorization: `Bearer ${key}` }),
  body: (slug, stream, asked = {}) => ({
    model: slug,
    stream,
    instructions: 'Be brief.',
    input: asked.image
      ? [
          {
            role: 'user',
            content: [
              { type: 'input_image', image_url: asked.image },
              { type: 'input_text', text: 'Hello' },
            ],
          },
        ]
      : 'Hello',
    reasoning: { effort: 'low' },
    ...(asked.maxTokens !== undefined ? { max_output_tokens: asked.maxTokens } : {}),
    ...(asked.tools ? { tools: [{ type: 'function', ...WEATHER, strict: false }] } : {}),
  }),
  read(body, stream) {
    const out = got();
    if (!stream) {
      const response = JSON.parse(body);
      out.finish = finishOf(response);
      for (const item of response.output) {
        if (item.type === 'message') out.text += item.content.map((c: any) => c.text).join('');
        if (item.type === 'reasoning')
          out.reasoning += [...item.summary, ...(item.content ?? [])].map((c: any) => c.text).join('');
        if (item.type === 'function_call') out.calls.push({ id: item.call_id, name: item.name, arguments: item.arguments });
      }
      return out;
    }
    // Read as a client streams it, from the deltas (a cut stream has no finished items).
    const calls = new Map<number, Got['calls'][number]>();
    for (const { data } of sseEvents(body)) {
      if (data.response) out.finish = finishOf(data.response);
      if (data.type === 'response.output_text.delta') out.text += data.delta;
      if (data.type === 'response.reasoning_summary_text.delta' || data.type === 'response.reasoning_text.delta')
        out.reasoning += data.delta;
      if (data.type === 'response.output_item.added' && data.item.type === 'function_call') {
        calls.set(data.output_index, { id: data.item.call_id, name: data.item.name, arguments: data.item.arguments ?? '' });
        out.calls.push(calls.get(data.output_index)!);
      }
      if (data.type === 'response.function_call_arguments.delta') {
        calls.get(data.output_index)!.arguments += data.delta;
        out.argumentPieces++;
      }
      // A finished call says what its deltas must add up to.
      if (data.type === 'response.output_item.done' && data.item.type === 'function_call')
        expect(calls.get(data.output_index)!.arguments).toBe(data.item.arguments);
    }
    return out;
  },
  usage(body, stream) {
    const usage = stream
      ? sseEvents(body).find((e) => e.data.type === 'response.completed')?.data.response.usage
      : JSON.parse(body).usage;
    return usage ? { output: usage.output_tokens, reasoning: usage.output_tokens_details?.reasoning_tokens ?? 0 } : null;
  },
  error: openAiError,
  streamError(body) {
    const error = sseEvents(body).find((e) => e.data.type === 'error')?.data;
    return error ? { type: error.code, message: error.message } : null;
  },
};

export const NATIVE: Surface = {
  name: 'native',
  tools: false,
  images: false,
  path: (slug) => `models/${slug}/chat`,
  headers: (key) => ({ authorization: `Bearer ${key}` }),
  body: (_slug, stream, asked = {}) => ({
    stream,
    messages: [{ role: 'user', content: 'Hello' }],
    ...(asked.maxTokens !== undefined ? { max_tokens: asked.maxTokens } : {}),
  }),
  read(body, stream) {
    const out = got();
    if (!stream) {
      const reply = JSON.parse(body);
      out.text = reply.text;
      out.finish = reply.finish_reason;
      return out;
    }
    for (const e of sseEvents(body)) {
      if (e.event === 'delta') out.text += e.data.text;
      if (e.event === 'done') out.finish = e.data.finish_reason;
    }
    return out;
  },
  // The native route reports tokens without their reasoning share.
  usage: () => null,
  error(body) {
    const { error } = JSON.parse(body);
    return { type: error.code, message: error.message };
  },
  streamError(body) {
    const error = sseEvents(body).find((e) => e.event === 'error')?.data.error;
    return error ? { type: error.code, message: error.message } : null;
  },
};

/**
 * Google's Gemini API (`/api/v1beta/models/{slug}:generateContent`, `:streamGenerateContent?alt=sse`),
 * as Google's own clients call it. Not one of SURFACES: its route is under its own version, and it
 * asks for thinking by a budget of its own.
 */
export const GENERATE_CONTENT: Surface<'gemini'> = {
  name: 'gemini',
  tools: true,
  images: true,
  version: 'v1beta',
  path: (slug, stream) => `models/${slug}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
  headers: (key) => ({ 'x-goog-api-key': key }),
  body: (_slug, _stream, asked = {}) => {
    const image = asked.image && DATA_URL.exec(asked.image);
    return {
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [
        {
          role: 'user',
          parts: [...(image ? [{ inlineData: { mimeType: image[1], data: image[2] } }] : []), { text: 'Hello' }],
        },
      ],
      generationConfig: {
        thinkingConfig: { thinkingBudget: asked.thinkingBudget ?? 2048, includeThoughts: true },
        ...(asked.maxTokens !== undefined ? { maxOutputTokens: asked.maxTokens } : {}),
      },
      ...(asked.tools
        ? {
            tools: [
              {
                functionDeclarations: [
                  { name: WEATHER.name, description: WEATHER.description, parametersJsonSchema: WEATHER.parameters },
                ],
              },
            ],
          }
        : {}),
    };
  },
  read(body, stream) {
    const out = got();
    for (const candidate of geminiResponses(body, stream).map((r) => r.candidates?.[0] ?? {})) {
      out.finish = candidate.finishReason ?? out.finish;
      for (const part of candidate.content?.parts ?? []) {
        if (part.thought) out.reasoning += part.text ?? '';
        else if (typeof part.text === 'string') out.text += part.text;
        if (part.thoughtSignature) out.signatures.push(part.thoughtSignature);
        if (!part.functionCall) continue;
        const { id, name, args } = part.functionCall;
        out.calls.push({ id, name, arguments: JSON.stringify(args) });
        // Google sends each call whole, in one part.
        if (stream) out.argumentPieces++;
      }
    }
    return out;
  },
  usage(body, stream) {
    const usage = geminiResponses(body, stream)
      .filter((r) => r.usageMetadata)
      .at(-1)?.usageMetadata;
    // The thoughts are counted apart from the candidates.
    const reasoning = usage?.thoughtsTokenCount ?? 0;
    return usage ? { output: (usage.candidatesTokenCount ?? 0) + reasoning, reasoning } : null;
  },
  // Google's error body: `{error: {code, message, status}}`, its canonical status name the type.
  error(body) {
    const { error } = JSON.parse(body);
    return { type: error.status, message: error.message };
  },
  streamError(body) {
    const error = sseData(body).find((data) => data.error)?.error;
    return error ? { type: error.status, message: error.message } : null;
  },
};

/** The responses of a Gemini API reply: the one whole, or each chunk of a stream. */
const geminiResponses = (body: string, stream: boolean): any[] => (stream ? sseData(body) : [JSON.parse(body)]);

export const SURFACES: Surface[] = [CHAT_COMPLETIONS, MESSAGES, RESPONSES, NATIVE];

/** The surfaces that carry tool calls and reasoning: every format a client of a host kind speaks. */
export const CHAT_SURFACES: Surface[] = SURFACES.filter((s) => s.tools);

/** POST on a surface for `slug`, with `key`; its answer read whole. `requestId`: the x-request-id to send. */
export async function callSurface(
  baseUrl: string,
  key: string,
  surface: Surface<string>,
  slug: string,
  stream: boolean,
  asked: Asked = {},
  requestId?: string,
): Promise<{ res: Response; text: string }> {
  return postToSurface(baseUrl, key, surface, slug, stream, surface.body(slug, stream, asked), requestId);
}

/** POST `body` (a request of the test's own) on a surface's route for `slug`, with `key` as the surface sends it; its answer read whole. */
export async function postToSurface(
  baseUrl: string,
  key: string,
  surface: Surface<string>,
  slug: string,
  stream: boolean,
  body: unknown,
  requestId?: string,
): Promise<{ res: Response; text: string }> {
  const res = await fetch(`${baseUrl}/api/${surface.version ?? 'v1'}/${surface.path(slug, stream)}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...surface.headers(key),
      ...(requestId !== undefined ? { 'x-request-id': requestId } : {}),
    },
    body: JSON.stringify(body),
  });
  return { res, text: await res.text() };
}
