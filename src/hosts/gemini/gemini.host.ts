import { randomBytes } from 'node:crypto';
import type {
  CanonicalEvent,
  CanonicalImage,
  CanonicalMessage,
  CanonicalRequest,
  CanonicalToolChoice,
  FinishReason,
  ReasoningEffort,
  Usage,
} from '../../canonical/canonical';
import { HostError, isOutput, upstreamIdOf } from '../../canonical/canonical';
import type { HostKind, SseMessage, StreamDecoder, UpstreamRequest } from '../host-kind';

/**
 * Gemini API hosts (`generativelanguage.googleapis.com/v1beta`): `models/{model}:generateContent`
 * for a whole reply, `:streamGenerateContent?alt=sse` for a stream, the key in `x-goog-api-key`.
 */

type Part = Record<string, unknown>;
interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const str = (value: unknown): string => (typeof value === 'string' ? value : '');

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** Image types Gemini takes, by the extension a URL's path ends with. */
const IMAGE_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  heic: 'image/heic',
  heif: 'image/heif',
};

/**
 * An image as a part: a `data:` URL inline (base64, as the API takes it), any other URL as file
 * data the API fetches itself (public HTTP URLs are one of its file inputs), with its type when
 * the URL's extension says it.
 */
function imagePart(image: CanonicalImage): Part {
  const inline = DATA_URL.exec(image.url);
  if (inline) return { inlineData: { mimeType: inline[1], data: inline[2] } };
  let extension = '';
  try {
    extension = new URL(image.url).pathname.split('.').at(-1)?.toLowerCase() ?? '';
  } catch {
    // Not a URL: the API says what is wrong with it.
  }
  const mimeType = IMAGE_TYPES[extension];
  return { fileData: { ...(mimeType ? { mimeType } : {}), fileUri: image.url } };
}

/**
 * A call's arguments as the object the API takes. The canonical arguments are the model's text,
 * which may be cut short or not an object; such a call already happened, so it is replayed with {}
 * rather than refused (its result still tells the model what came of it).
 */
function argsOf(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/**
 * A model turn's parts: its text, then its calls. The thought signature the host gave the turn
 * goes back where Gemini puts it: on the first call when there are calls (required there by
 * Gemini 3), else on the last part.
 */
function modelParts(message: Extract<CanonicalMessage, { role: 'assistant' }>): Part[] {
  const parts: Part[] = [
    ...(message.content === '' ? [] : [{ text: message.content }]),
    ...message.toolCalls.map((call) => ({ functionCall: { name: call.name, args: argsOf(call.arguments) } })),
  ];
  const signature = message.reasoning?.signature;
  if (signature && parts.length > 0) {
    const signed = parts.findIndex((part) => 'functionCall' in part);
    const at = signed === -1 ? parts.length - 1 : signed;
    parts[at] = { ...parts[at], thoughtSignature: signature };
  }
  return parts;
}

/**
 * The conversation as contents. Tool results are `functionResponse` parts of user turns, named by
 * the call they answer (the API matches them by name and order); consecutive turns of one role are
 * one content, so that the results of parallel calls travel together as the API asks. Instructions
 * given mid-conversation have no place in contents: they join the system instruction (see below).
 */
function contentsOf(messages: CanonicalMessage[]): Content[] {
  const names = new Map<string, string>();
  const contents: Content[] = [];
  for (const message of messages) {
    let role: Content['role'];
    let parts: Part[];
    switch (message.role) {
      case 'system':
        continue;
      case 'user':
        role = 'user';
        parts = [...(message.images ?? []).map(imagePart), ...(message.content === '' ? [] : [{ text: message.content }])];
        break;
      case 'assistant':
        role = 'model';
        for (const call of message.toolCalls) names.set(call.id, call.name);
        parts = modelParts(message);
        break;
      case 'tool':
        role = 'user';
        parts = [
          {
            functionResponse: {
              name: names.get(message.toolCallId) ?? message.toolCallId,
              response: { output: message.content },
            },
          },
        ];
        break;
    }
    // The API refuses a content without parts.
    if (parts.length === 0) continue;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  }
  return contents;
}

function toolConfigOf(choice: CanonicalToolChoice): Record<string, unknown> {
  if (typeof choice === 'object') return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.name] } };
  return { functionCallingConfig: { mode: choice === 'required' ? 'ANY' : choice === 'none' ? 'NONE' : 'AUTO' } };
}

/**
 * A thinking budget for each effort, as Google's own OpenAI-compatible endpoint maps
 * `reasoning_effort` (low 1,024, medium 8,192, high 24,576: within what every 2.5 model takes);
 * minimal the least Flash-Lite thinks with.
 */
const EFFORT_BUDGET: Record<Exclude<ReasoningEffort, 'none'>, number> = { minimal: 512, low: 1024, medium: 8192, high: 24576 };

/**
 * Thinking for a reasoning request: its budget, or its effort's, with the thoughts shown; `none` a
 * budget of 0. Nothing when the client said nothing: the model thinks as it does by default, its
 * thoughts not shown.
 */
function thinkingConfigOf(reasoning: CanonicalRequest['reasoning']): Record<string, unknown> | undefined {
  if (reasoning === undefined) return undefined;
  if (reasoning.effort === 'none') return { thinkingBudget: 0 };
  return { thinkingBudget: reasoning.budgetTokens ?? EFFORT_BUDGET[reasoning.effort ?? 'medium'], includeThoughts: true };
}

function buildRequest(request: CanonicalRequest, hostModel: string, apiKey: string | null): UpstreamRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (apiKey !== null) headers['x-goog-api-key'] = apiKey;
  const model = encodeURIComponent(hostModel);
  const path = request.stream ? `/models/${model}:streamGenerateContent?alt=sse` : `/models/${model}:generateContent`;
  const body: Record<string, unknown> = { contents: contentsOf(request.messages) };
  // Every instruction, those given mid-conversation after the others (their position is lost, their text is not).
  const system = [
    ...request.system,
    ...request.messages.flatMap((message) => (message.role === 'system' ? [message.content] : [])),
  ].filter((text) => text !== '');
  if (system.length > 0) body.systemInstruction = { parts: [{ text: system.join('\n\n') }] };
  if (request.tools.length > 0) {
    body.tools = [
      {
        functionDeclarations: request.tools.map((tool) => ({
          name: tool.name,
          ...(tool.description ? { description: tool.description } : {}),
          // JSON Schema as the client wrote it: the API's own `parameters` takes only an OpenAPI subset.
          parametersJsonSchema: tool.parameters,
        })),
      },
    ];
    // Inside the branch: a tool choice without tools means nothing to the API.
    if (request.toolChoice !== undefined) body.toolConfig = toolConfigOf(request.toolChoice);
  }
  const config: Record<string, unknown> = { candidateCount: 1 };
  if (request.maxTokens !== undefined) config.maxOutputTokens = request.maxTokens;
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.topP !== undefined) config.topP = request.topP;
  if (request.topK !== undefined) config.topK = request.topK;
  if (request.stop.length > 0) config.stopSequences = request.stop;
  const thinking = thinkingConfigOf(request.reasoning);
  if (thinking) config.thinkingConfig = thinking;
  body.generationConfig = config;
  return { path, headers, body };
}

/**
 * A candidate's `finishReason` as a finish reason: the cap, the filters (safety, recitation,
 * blocklists, personal data, images), else a stop (a call made is `tool_calls`, see finishOf).
 * Reasons this does not know end the reply as a stop.
 */
export const GEMINI_FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
  IMAGE_PROHIBITED_CONTENT: 'content_filter',
  IMAGE_RECITATION: 'content_filter',
  MODEL_ARMOR: 'content_filter',
};

const finishOf = (reason: string, called: boolean): FinishReason => {
  const mapped = Object.hasOwn(GEMINI_FINISH_REASONS, reason) ? GEMINI_FINISH_REASONS[reason] : 'stop';
  return called && mapped === 'stop' ? 'tool_calls' : mapped;
};

/** A count as the host wrote it, for the pipeline to check (see inference/usage-check.ts), as the other kinds read it. */
const count = (value: unknown, absent: number): number =>
  typeof value === 'number' ? value : value === undefined || value === null ? absent : NaN;

/** A count shown to clients but never billed on its own (thoughts, within the output): a whole number ≥ 0, else 0. */
const shownCount = (value: unknown): number => (Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : 0);

/**
 * Tokens by class from `usageMetadata`. `promptTokenCount` includes the cached content's tokens,
 * taken out here; the prompts the host's tools added (`toolUsePromptTokenCount`) are input too. The
 * thoughts are billed as output beside the candidates' tokens. The format reports no cache writes
 * (an explicit cache is created, and billed, apart). `promptTokenCount` is the required count:
 * without it, NaN; a reply that generated nothing (a blocked prompt, a reply cut while thinking)
 * has no `candidatesTokenCount`. `webSearches`: the grounding queries the host ran.
 */
export function geminiUsageOf(metadata: Record<string, unknown>, webSearches = 0): Usage {
  const cached = count(metadata.cachedContentTokenCount, 0);
  return {
    inputTokens: count(metadata.promptTokenCount, NaN) - cached + count(metadata.toolUsePromptTokenCount, 0),
    cacheReadTokens: cached,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: count(metadata.candidatesTokenCount, 0) + count(metadata.thoughtsTokenCount, 0),
    reasoningTokens: shownCount(metadata.thoughtsTokenCount),
    ...(webSearches > 0 ? { hostedToolUses: { webSearch: webSearches } } : {}),
  };
}

/** Google Search grounding's queries in a candidate: each one a web search the host ran. */
const webSearchesOf = (candidate: Record<string, unknown>): number | null =>
  isObject(candidate.groundingMetadata) && Array.isArray(candidate.groundingMetadata.webSearchQueries)
    ? candidate.groundingMetadata.webSearchQueries.length
    : null;

/** The API's error object's message, with its status (`RESOURCE_EXHAUSTED: …`) when it names one. */
function errorText(error: unknown): string {
  if (!isObject(error)) return 'upstream reported an error';
  const message = str(error.message) || 'upstream reported an error';
  return typeof error.status === 'string' && error.status !== '' ? `${error.status}: ${message}` : message;
}

/** A call id the host did not give (Gemini 2.5 gives none): the canonical stream names every call. */
const mintCallId = () => `call_${randomBytes(12).toString('hex')}`;

/**
 * One response (a whole reply, or one chunk of a stream) as canonical events, `calls` counting the
 * calls of the reply so far: its parts in order (thoughts as reasoning, text, calls whole with
 * their arguments, each its own index; a part's thought signature as reasoning that carries it),
 * its finish when the candidate has one, and its usage (with the grounding searches) when it has
 * one. A prompt the host blocked (`promptFeedback.blockReason`, no candidate) is a content filter.
 */
class ResponseReader {
  calls = 0;
  /** The grounding searches reported so far (a stream may report them before its usage). */
  private webSearches = 0;
  private lastUsage: Record<string, unknown> | null = null;

  read(response: Record<string, unknown>): { events: CanonicalEvent[]; ended: boolean } {
    if (response.error !== undefined) throw new HostError('upstream_error', errorText(response.error));
    const candidate = Array.isArray(response.candidates) && isObject(response.candidates[0]) ? response.candidates[0] : null;
    const events: CanonicalEvent[] = [];
    let ended = false;
    if (candidate) {
      const content = isObject(candidate.content) ? candidate.content : {};
      for (const part of Array.isArray(content.parts) ? content.parts.filter(isObject) : []) events.push(...this.part(part));
      if (typeof candidate.finishReason === 'string' && candidate.finishReason !== '') {
        events.push({ type: 'finish', reason: finishOf(candidate.finishReason, this.calls > 0) });
        ended = true;
      }
    }
    const feedback = isObject(response.promptFeedback) ? response.promptFeedback : {};
    if (!candidate && typeof feedback.blockReason === 'string') {
      events.push({ type: 'finish', reason: 'content_filter' });
      ended = true;
    }
    const searches = candidate ? webSearchesOf(candidate) : null;
    const searched = searches !== null && searches !== this.webSearches;
    if (searches !== null) this.webSearches = searches;
    if (isObject(response.usageMetadata)) this.lastUsage = response.usageMetadata;
    if (this.lastUsage && (isObject(response.usageMetadata) || searched))
      events.push({ type: 'usage', usage: geminiUsageOf(this.lastUsage, this.webSearches) });
    return { events, ended };
  }

  private part(part: Record<string, unknown>): CanonicalEvent[] {
    const signature = typeof part.thoughtSignature === 'string' && part.thoughtSignature !== '' ? part.thoughtSignature : null;
    const signed: CanonicalEvent[] = signature ? [{ type: 'reasoning', text: '', signature }] : [];
    if (part.thought === true) return [{ type: 'reasoning', text: str(part.text), ...(signature ? { signature } : {}) }];
    if (typeof part.text === 'string')
      return [...signed, ...(part.text === '' ? [] : [{ type: 'text', text: part.text } as const])];
    if (isObject(part.functionCall)) {
      const call = part.functionCall;
      return [
        ...signed,
        {
          type: 'tool_call',
          index: this.calls++,
          id: typeof call.id === 'string' && call.id !== '' ? call.id : mintCallId(),
          name: str(call.name),
          argumentsDelta: JSON.stringify(isObject(call.args) ? call.args : {}),
        },
      ];
    }
    // Other parts (code the host ran and its results, files it made) answer tools this kind never offers.
    return signed;
  }
}

function parseObject(data: string, what: string, beforeOutput = true): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw new HostError('malformed', `upstream sent ${what} that is not JSON: ${data.slice(0, 100)}`, null, beforeOutput);
  }
  if (!isObject(parsed)) throw new HostError('malformed', `upstream sent ${what} that is not a JSON object`, null, beforeOutput);
  return parsed;
}

/** A whole `GenerateContentResponse` (and itself, passed through, with its id). */
function decodeReply(body: string, passThrough = false): CanonicalEvent[] {
  const parsed = parseObject(body, 'a reply');
  if (parsed.error === undefined && !Array.isArray(parsed.candidates) && !isObject(parsed.promptFeedback))
    throw new HostError('malformed', 'upstream sent a reply without candidates');
  const { events } = new ResponseReader().read(parsed);
  const id = passThrough && upstreamIdOf(parsed.responseId);
  return [...(id ? [id] : []), ...events, ...(passThrough ? [{ type: 'pass_through', data: parsed } as const] : [])];
}

/**
 * A Gemini stream: each message a `GenerateContentResponse` carrying the parts generated since the
 * last, and the usage so far (cumulative: the last one counts). The stream has no end marker of its
 * own: it is complete once a chunk has said why it finished (or that the prompt was blocked) and
 * one, that one or a later one, how much it used; the connection closing before then is a cut.
 */
class GeminiDecoder implements StreamDecoder {
  done = false;
  private produced = false;
  private readonly reader = new ResponseReader();
  private opened = false;
  /** A chunk said why the reply finished. */
  private finished = false;

  constructor(private readonly passThrough: boolean) {}

  push(message: SseMessage): CanonicalEvent[] {
    const parsed = parseObject(message.data, 'a stream chunk', !this.produced);
    let read: { events: CanonicalEvent[]; ended: boolean };
    try {
      read = this.reader.read(parsed);
    } catch (error) {
      if (error instanceof HostError) throw new HostError(error.kind, error.message, error.status, !this.produced);
      throw error;
    }
    const { events, ended } = read;
    if (events.some(isOutput)) this.produced = true;
    // A finish may come a chunk before its usage: complete once both have come.
    this.finished ||= ended;
    if (this.finished && isObject(parsed.usageMetadata)) this.done = true;
    if (!this.passThrough) return events;
    // Passed whole: the chunk itself goes first, and the response's id with the first chunk.
    const id = !this.opened && upstreamIdOf(parsed.responseId);
    this.opened = true;
    return [{ type: 'pass_through', data: parsed }, ...(id ? [id] : []), ...events];
  }
}

/** The API's error body (`{"error": {"code", "message", "status"}}`, in an array from a stream not asked as SSE), or its text. */
function errorMessage(status: number, body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    const first = Array.isArray(parsed) ? (parsed[0] as unknown) : parsed;
    if (isObject(first) && isObject(first.error)) return errorText(first.error);
  } catch {
    // Not JSON (a proxy's page, plain text): the text itself is the best message.
  }
  return body.trim().slice(0, 300) || `upstream answered ${status}`;
}

export const geminiHost: HostKind<'gemini'> = {
  name: 'gemini',
  buildRequest,
  decoder: (passThrough = false) => new GeminiDecoder(passThrough),
  decodeReply,
  errorMessage,
};
