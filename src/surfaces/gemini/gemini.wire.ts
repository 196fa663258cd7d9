import type {
  CanonicalImage,
  CanonicalMessage,
  CanonicalRequest,
  CanonicalTool,
  CanonicalToolCall,
  CanonicalToolChoice,
  Citation,
  FinishReason,
  ReasoningEffort,
} from '../../canonical/canonical';
import type { CatalogueModel } from '../../catalogue/catalogue';
import { ApiError, ApiErrorCode } from '../../http/api-error';
import type { InferenceResult, PipelineEvent } from '../../inference/inference.command';
import type { Reply } from '../../inference/reduce';
import { allInputTokens, reasoningTokens, replyTokens } from '../reply-usage';
import { sseData, StreamSerializer } from '../sse';
import { Content, GEMINI_TOOLS, GenerateContentRequest, GenerationConfig, Part, Tool } from './gemini.schema';

/** The Gemini API's wire format, in and out. Pure translation; no I/O. */

const refuse = (message: string): never => {
  throw new ApiError('invalid_request', message);
};

/** What a part carries that no other format has a counterpart for, by its field's name. */
const UNCARRIED_PARTS = ['executableCode', 'codeExecutionResult', 'videoMetadata'] as const;

const partText = (parts: Part[], separator: string): string =>
  parts
    .filter((p) => typeof p.text === 'string' && p.thought !== true)
    .map((p) => p.text)
    .join(separator);

/** An `inlineData` image as a data URL, a `fileData` image at an http(s) address as that address; any other data refused. */
function imageOf(part: Part, at: string): CanonicalImage | null {
  if (part.inlineData) {
    const { mimeType, data } = part.inlineData;
    if (!mimeType.startsWith('image/')) refuse(`${at}.inlineData: only images are carried (mimeType "${mimeType.slice(0, 64)}")`);
    return { url: `data:${mimeType};base64,${data}` };
  }
  if (part.fileData) {
    const { mimeType = '', fileUri } = part.fileData;
    // A Files API upload (on Google's host) is reachable only with a Google key: no other host can fetch it.
    if (
      !mimeType.startsWith('image/') ||
      !/^https?:\/\//.test(fileUri) ||
      /^https:\/\/generativelanguage\.googleapis\.com\//.test(fileUri)
    )
      refuse(`${at}.fileData: only images at an http(s) address are carried (the Files API and gs:// URIs are not)`);
    return { url: fileUri };
  }
  return null;
}

/**
 * A function's result as the text a tool message carries: `{"output": "…"}` (what Gemini CLI and
 * the API's examples send) is its text, `{"error": "…"}` is that text after `Error: `, anything
 * else its JSON.
 */
function resultText(response: Record<string, unknown>): string {
  const keys = Object.keys(response);
  if (keys.length === 1 && typeof response.output === 'string') return response.output;
  if (keys.length === 1 && typeof response.error === 'string') return `Error: ${response.error}`;
  return JSON.stringify(response);
}

/**
 * The conversation. Calls without an id (the API gives none) get one from their place, and each
 * response answers the call of its id, else the earliest unanswered call of its name: the order
 * the API pairs them in.
 */
function messagesOf(contents: Content[]): CanonicalMessage[] {
  const messages: CanonicalMessage[] = [];
  let unanswered: CanonicalToolCall[] = [];
  contents.forEach((content, turn) => {
    const at = `contents[${turn}]`;
    const role = content.role ?? 'user';
    if (role !== 'user' && role !== 'model' && role !== 'function')
      refuse(`${at}.role must be "user" or "model" (not "${role.slice(0, 32)}")`);
    content.parts.forEach((part, index) => {
      const field = UNCARRIED_PARTS.find((name) => part[name] !== undefined);
      if (field) refuse(`${at}.parts[${index}].${field} is not carried: no other format has a counterpart`);
    });
    if (role === 'model') {
      const toolCalls = content.parts.flatMap((part, index) =>
        part.functionCall
          ? [
              {
                id: part.functionCall.id || `call_${turn}_${index}`,
                name: part.functionCall.name,
                arguments: JSON.stringify(part.functionCall.args ?? {}),
              },
            ]
          : [],
      );
      content.parts.forEach((part, index) => {
        if (part.inlineData || part.fileData) refuse(`${at}.parts[${index}]: a model turn's data parts are not carried`);
      });
      // The turn's thoughts and its signature (the last, as a reply signs its turn), for hosts that take them back (Gemini's).
      const signature = content.parts
        .map((part) => part.thoughtSignature)
        .filter((s): s is string => typeof s === 'string' && s !== '')
        .at(-1);
      const thoughts = content.parts
        .filter((part) => part.thought === true)
        .map((part) => part.text ?? '')
        .join('');
      const reasoning = signature ? { text: thoughts, signature } : thoughts !== '' ? { text: thoughts } : undefined;
      messages.push({ role: 'assistant', content: partText(content.parts, ''), toolCalls, ...(reasoning ? { reasoning } : {}) });
      unanswered = [...toolCalls];
      return;
    }
    const images: CanonicalImage[] = [];
    content.parts.forEach((part, index) => {
      const at_ = `${at}.parts[${index}]`;
      if (part.functionCall) refuse(`${at_}.functionCall: a function call belongs in a "model" turn`);
      const response = part.functionResponse;
      if (response) {
        if ((response.parts ?? []).length > 0) refuse(`${at_}.functionResponse.parts is not carried: a result is text`);
        // By id; else (no id, or one the client made up for a call that had none) by name.
        const call =
          unanswered.find((c) => response.id !== undefined && c.id === response.id) ??
          unanswered.find((c) => c.name === response.name);
        if (!call) refuse(`${at_}.functionResponse answers no call of "${response.name}" in the model turn before it`);
        unanswered = unanswered.filter((c) => c !== call);
        messages.push({ role: 'tool', toolCallId: call!.id, content: resultText(response.response) });
        return;
      }
      const image = imageOf(part, at_);
      if (image) images.push(image);
    });
    const text = partText(content.parts, '\n');
    const hasResults = content.parts.some((p) => p.functionResponse);
    if (images.length > 0) messages.push({ role: 'user', content: text, images });
    else if (text !== '' || !hasResults) messages.push({ role: 'user', content: text });
  });
  return messages;
}

/** The API's Schema (OpenAPI 3.0's subset, types in capitals, `nullable`) as JSON Schema. */
export function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema as Record<string, unknown>)) {
    // An ordering hint for the API's own generation: JSON Schema has no counterpart.
    if (key === 'propertyOrdering' || key === 'nullable') continue;
    if (key === 'type' && typeof value === 'string') out.type = value.toLowerCase();
    else if (key === 'properties' && typeof value === 'object' && value !== null)
      out.properties = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, jsonSchemaOf(s)]));
    else if (key === 'items' || key === 'anyOf') out[key] = jsonSchemaOf(value);
    else out[key] = value;
  }
  const nullable = (schema as { nullable?: unknown }).nullable === true;
  return nullable && typeof out.type === 'string' ? { ...out, type: [out.type, 'null'] } : out;
}

/**
 * The API's own tools that are hosted tools of the kinds the other formats name (Google Search and
 * its older retrieval form: web search; URL context: web fetch; code execution; file search): they
 * go on the request by these names, for admission to decide on (hosted-tools.ts): carried, as its
 * own tool, to a host that runs their class, else left out and announced. The API's other tools
 * (maps, a computer) are refused.
 */
const HOSTED: ReadonlySet<string> = new Set([
  'googleSearch',
  'googleSearchRetrieval',
  'urlContext',
  'codeExecution',
  'fileSearch',
]);

type Mode = 'AUTO' | 'ANY' | 'NONE';

/** The functions offered, the hosted tools offered (by their name here), and the tool choice. */
function toolsOf(body: GenerateContentRequest): Pick<CanonicalRequest, 'tools' | 'toolChoice' | 'hostedTools'> {
  const declarations = (body.tools ?? []).flatMap((t) => t.functionDeclarations ?? []);
  const hosted: string[] = [];
  (body.tools ?? []).forEach((tool: Tool, index) => {
    for (const name of GEMINI_TOOLS) {
      if (tool[name] === undefined) continue;
      if (!HOSTED.has(name)) refuse(`tools[${index}].${name} is not carried: no other format runs it`);
      hosted.push(name);
    }
  });
  const config = body.toolConfig?.functionCallingConfig;
  const mode = (config?.mode ?? 'AUTO').toUpperCase();
  if (mode !== 'AUTO' && mode !== 'ANY' && mode !== 'NONE' && mode !== 'MODE_UNSPECIFIED')
    refuse(`toolConfig.functionCallingConfig.mode "${mode.slice(0, 32)}" is not carried (AUTO, ANY or NONE)`);
  const allowed = config?.allowedFunctionNames ?? [];
  if (allowed.length > 0 && mode !== 'ANY')
    refuse('toolConfig.functionCallingConfig.allowedFunctionNames is taken only with mode ANY');
  for (const name of allowed)
    if (!declarations.some((d) => d.name === name))
      refuse(
        `toolConfig.functionCallingConfig.allowedFunctionNames names "${name.slice(0, 64)}", which no functionDeclaration declares`,
      );
  // With ANY, only the allowed functions can be called: the others are not offered.
  const offered = allowed.length > 0 ? declarations.filter((d) => allowed.includes(d.name)) : declarations;
  const tools: CanonicalTool[] = offered.map((d) => ({
    name: d.name,
    description: d.description,
    parameters: (d.parametersJsonSchema ?? jsonSchemaOf(d.parameters ?? { type: 'object', properties: {} })) as Record<
      string,
      unknown
    >,
  }));
  const choices: Record<Mode, CanonicalToolChoice> = {
    AUTO: 'auto',
    NONE: 'none',
    ANY: offered.length === 1 && allowed.length === 1 ? { name: offered[0].name } : 'required',
  };
  const toolChoice = tools.length === 0 || mode === 'MODE_UNSPECIFIED' ? undefined : choices[mode as Mode];
  // ANY requires a call: of a function, or (with none declared) of a hosted tool, which admission refuses if no host runs one.
  const hostedTools = { hosted, clientTools: declarations.length > 0, required: mode === 'ANY' ? ('any' as const) : null };
  return { tools, toolChoice, ...(hosted.length > 0 ? { hostedTools } : {}) };
}

const LEVELS: Record<string, Exclude<ReasoningEffort, 'none'>> = {
  MINIMAL: 'minimal',
  LOW: 'low',
  MEDIUM: 'medium',
  HIGH: 'high',
};

/**
 * `thinkingBudget` 0 is none, else a budget; `thinkingLevel` an effort. A dynamic budget (-1), or
 * `includeThoughts` without a budget, asks for reasoning with neither (the host's own dynamic
 * thinking, its thoughts shown); nothing said, none is asked for.
 */
function reasoningOf(thinking: GenerationConfig['thinkingConfig']): CanonicalRequest['reasoning'] {
  if (thinking?.thinkingLevel !== undefined) {
    const effort = LEVELS[thinking.thinkingLevel.toUpperCase()];
    if (!effort) refuse(`generationConfig.thinkingConfig.thinkingLevel must be MINIMAL, LOW, MEDIUM or HIGH`);
    if (thinking.thinkingBudget !== undefined)
      refuse('generationConfig.thinkingConfig: give thinkingBudget or thinkingLevel, not both');
    return { effort };
  }
  const budget = thinking?.thinkingBudget;
  if (budget === -1 || (budget === undefined && thinking?.includeThoughts === true)) return {};
  if (budget === undefined) return undefined;
  return budget === 0 ? { effort: 'none' } : { budgetTokens: budget };
}

/**
 * The generation settings, each carried or refused by name. Left out (the README says so):
 * `seed`, the penalties, `enableEnhancedCivicAnswers` and `mediaResolution`, which no host is sent.
 */
function settingsOf(
  config: GenerationConfig = {},
): Pick<CanonicalRequest, 'maxTokens' | 'temperature' | 'topP' | 'topK' | 'stop' | 'reasoning' | 'outputFormat'> {
  if ((config.candidateCount ?? 1) > 1)
    refuse('generationConfig.candidateCount above 1 is not carried: one candidate is answered');
  for (const field of ['speechConfig', 'imageConfig'] as const)
    if (config[field] != null) refuse(`generationConfig.${field} is not carried`);
  if (config.responseLogprobs === true || config.logprobs != null)
    refuse('generationConfig.responseLogprobs and logprobs are not carried');
  const modalities = config.responseModalities ?? [];
  if (modalities.some((m) => m.toUpperCase() !== 'TEXT')) refuse('generationConfig.responseModalities: only TEXT is carried');
  return {
    maxTokens: config.maxOutputTokens ?? undefined,
    temperature: config.temperature ?? undefined,
    topP: config.topP ?? undefined,
    topK: config.topK ?? undefined,
    stop: config.stopSequences ?? [],
    reasoning: reasoningOf(config.thinkingConfig),
    ...outputFormatOf(config),
  };
}

const isSchemaObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Structured output, as the API takes it: `responseMimeType` "application/json" alone (JSON mode), or
 * beside one schema, `responseJsonSchema` (JSON Schema) or `responseSchema` (the API's OpenAPI subset,
 * kept as given for Google's hosts and translated for the others). A schema needs that MIME type, and
 * one schema is given at most; the API's other MIME types (`text/x.enum`…) are not carried.
 */
function outputFormatOf(config: GenerationConfig): Pick<CanonicalRequest, 'outputFormat'> {
  const mime = config.responseMimeType;
  const { responseSchema, responseJsonSchema } = config;
  if (mime !== undefined && mime !== 'text/plain' && mime !== 'application/json')
    refuse(`generationConfig.responseMimeType "${mime.slice(0, 64)}" is not carried: only text/plain and application/json`);
  if (responseSchema != null && responseJsonSchema != null)
    refuse('generationConfig: give responseSchema or responseJsonSchema, not both');
  const given = responseJsonSchema != null ? 'responseJsonSchema' : responseSchema != null ? 'responseSchema' : null;
  if (given !== null && mime !== 'application/json')
    refuse(`generationConfig.${given} needs responseMimeType "application/json"`);
  if (mime !== 'application/json') return {};
  if (given === null) return { outputFormat: { type: 'json_object' } };
  const schema = config[given];
  if (!isSchemaObject(schema)) return refuse(`generationConfig.${given} must be an object`);
  return {
    outputFormat:
      given === 'responseJsonSchema'
        ? { type: 'json_schema', schema }
        : { type: 'json_schema', schema: jsonSchemaOf(schema) as Record<string, unknown>, openApiSchema: schema },
  };
}

const systemOf = (instruction: GenerateContentRequest['systemInstruction']): string[] => {
  if (instruction === undefined) return [];
  const text = typeof instruction === 'string' ? instruction : partText(instruction.parts, '\n');
  return text === '' ? [] : [text];
};

/** A generate request as a canonical one; `stream` from the route it came on. */
export function toCanonical(body: GenerateContentRequest, stream: boolean): CanonicalRequest {
  if (body.cachedContent !== undefined)
    refuse(
      'cachedContent is not carried: the gateway keeps no cached contents (send the whole conversation; hosts cache on their own)',
    );
  const { tools, toolChoice, hostedTools } = toolsOf(body);
  return {
    system: systemOf(body.systemInstruction),
    messages: messagesOf(body.contents),
    tools,
    toolChoice,
    ...settingsOf(body.generationConfig),
    stream,
    ...(hostedTools ? { hostedTools } : {}),
  };
}

/** Whether the client asked to see the model's thoughts (the API shows none otherwise). */
export const showsThoughts = (body: Pick<GenerateContentRequest, 'generationConfig'>): boolean =>
  body.generationConfig?.thinkingConfig?.includeThoughts === true;

const FINISH: Record<FinishReason, string> = {
  stop: 'STOP',
  stop_sequence: 'STOP',
  // The API ends a turn with function calls as STOP too.
  tool_calls: 'STOP',
  length: 'MAX_TOKENS',
  content_filter: 'SAFETY',
};

/**
 * `promptTokenCount` is every input token, the cache's included (`cachedContentTokenCount` says
 * how many were read from it); `candidatesTokenCount` the output without the thoughts, which
 * `thoughtsTokenCount` counts; the zero counts left out, as the API does.
 */
export function usageMetadataOf(reply: Pick<Reply, 'billed' | 'usage'>) {
  const tokens = replyTokens(reply);
  const prompt = allInputTokens(tokens);
  const thoughts = Math.min(reasoningTokens(reply), tokens.outputTokens);
  const candidates = tokens.outputTokens - thoughts;
  return {
    promptTokenCount: prompt,
    ...(tokens.cacheReadTokens > 0 ? { cachedContentTokenCount: tokens.cacheReadTokens } : {}),
    candidatesTokenCount: candidates,
    ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
    totalTokenCount: prompt + tokens.outputTokens,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
}

/** Arguments as the `args` object the format wants; arguments that are not a JSON object become {}. */
function argsOf(args: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(args || '{}') as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const callPart = (call: CanonicalToolCall) => ({ functionCall: { id: call.id, name: call.name, args: argsOf(call.arguments) } });

/** A thought summary's part; its signature goes on the part it signed (see signed). */
const thoughtPart = (text: string) => ({ text, thought: true });

/**
 * Parts with the turn's thought signature where the API puts it, thoughts shown or not: on the
 * first function call, else on the last part. A Gemini client sending back the turn's call (Gemini
 * CLI keeps calls in its history, not thoughts) sends the signature back with it.
 */
function signed(parts: Record<string, unknown>[], signature: string | undefined): Record<string, unknown>[] {
  if (!signature || parts.length === 0) return parts;
  const call = parts.findIndex((part) => 'functionCall' in part);
  const at = call === -1 ? parts.length - 1 : call;
  return parts.map((part, index) => (index === at ? { ...part, thoughtSignature: signature } : part));
}

/** The reply's id and model, as every response (and every chunk) names them. */
const replyNames = (result: InferenceResult) => ({ modelVersion: result.model.slug, responseId: result.requestId });

/**
 * The pages the host cited (a hosted web search's), as the format's grounding: each page once as a
 * chunk, each passage a support naming its pages, its offsets in UTF-8 bytes of the reply's `text`
 * as Google gives them. The queries run and the search entry point are the host's own, which the
 * canonical stream does not carry: they are left out.
 */
export function groundingMetadataOf(citations: Citation[], text: string) {
  const chunks: { web: { uri: string; title: string } }[] = [];
  const chunkOf = new Map<string, number>();
  const supports = new Map<string, { segment: Record<string, unknown>; groundingChunkIndices: number[] }>();
  const byteAt = (char: number) => Buffer.byteLength(text.slice(0, char));
  for (const { url, title, start, end } of citations) {
    let index = chunkOf.get(url);
    if (index === undefined) {
      index = chunks.push({ web: { uri: url, title } }) - 1;
      chunkOf.set(url, index);
    }
    const key = `${start}:${end}`;
    const support = supports.get(key) ?? {
      segment: { startIndex: byteAt(start), endIndex: byteAt(end), text: text.slice(start, end) },
      groundingChunkIndices: [],
    };
    if (!support.groundingChunkIndices.includes(index)) support.groundingChunkIndices.push(index);
    supports.set(key, support);
  }
  return { groundingChunks: chunks, groundingSupports: [...supports.values()] };
}

/** A GenerateContentResponse of one candidate; the last one with the finish, the usage and the grounding (when the host cited pages). */
const response = (
  result: InferenceResult,
  parts: unknown[],
  end?: { finish: FinishReason; usage: Pick<Reply, 'billed' | 'usage'>; citations: Citation[]; text: string },
) => ({
  candidates: [
    {
      content: { parts, role: 'model' },
      ...(end ? { finishReason: FINISH[end.finish] } : {}),
      ...(end && end.citations.length > 0 ? { groundingMetadata: groundingMetadataOf(end.citations, end.text) } : {}),
      index: 0,
    },
  ],
  ...(end ? { usageMetadata: usageMetadataOf(end.usage) } : {}),
  ...replyNames(result),
});

/** The whole reply: thoughts (when asked for), the text, the calls. */
export function responseBody(result: InferenceResult, reply: Reply, thoughts: boolean) {
  const parts = signed(
    [
      ...(thoughts && reply.reasoning !== '' ? [thoughtPart(reply.reasoning)] : []),
      ...(reply.text !== '' || reply.toolCalls.length === 0 ? [{ text: reply.text }] : []),
      ...reply.toolCalls.map(callPart),
    ],
    reply.reasoningSignature,
  );
  return response(result, parts, { finish: reply.finish, usage: reply, citations: reply.citations, text: reply.text });
}

/**
 * `data: {GenerateContentResponse}` chunks: text and thoughts as they come, each function call
 * whole once its arguments are (the API streams calls whole), then a last chunk with the finish
 * reason and the usage, written when the stream closes: after the settlement, as every surface's end.
 */
export function chunkSerializer(result: InferenceResult, thoughts: boolean): StreamSerializer {
  const calls: CanonicalToolCall[] = [];
  let finish: FinishReason = 'stop';
  let usage: Reply['usage'] = null;
  let billed: Reply['billed'] = null;
  const citations: Citation[] = [];
  let text = '';
  const chunk = (parts: unknown[]) => sseData(response(result, parts));
  /** The last signature the host gave, not yet sent: on the next call, else on the last chunk's part. */
  let signature: string | undefined;
  const flushCalls = () => {
    const done = calls.filter(Boolean);
    calls.length = 0;
    if (done.length === 0) return '';
    const parts = signed(done.map(callPart), signature);
    signature = undefined;
    return chunk(parts);
  };
  return {
    open: () => '',
    event(event: PipelineEvent) {
      switch (event.type) {
        case 'text':
          text += event.text;
          return event.text === '' ? '' : chunk([{ text: event.text }]);
        case 'citation':
          citations.push(event);
          return '';
        case 'reasoning':
          if (event.signature) signature = event.signature;
          return thoughts && event.text !== '' ? chunk([thoughtPart(event.text)]) : '';
        case 'tool_call': {
          const call = (calls[event.index] ??= { id: '', name: '', arguments: '' });
          if (event.id) call.id = event.id;
          if (event.name) call.name = event.name;
          call.arguments += event.argumentsDelta;
          return '';
        }
        case 'finish':
          finish = event.reason;
          return flushCalls();
        case 'usage':
          usage = event.usage;
          return '';
        case 'billed':
          billed = event;
          return '';
        default:
          return '';
      }
    },
    // The last chunk names the settlement's position (`ledgerPosition`, in the API's camelCase), as the header does a whole reply's.
    close: () =>
      flushCalls() +
      sseData({
        // A signature no call took (a reply of text) on the last chunk's empty text, as the API sends it.
        ...response(result, signature ? signed([{ text: '' }], signature) : [], {
          finish,
          usage: { billed, usage },
          citations,
          text,
        }),
        ...(billed ? { ledgerPosition: billed.position } : {}),
      }),
    error: (error: ApiError) => sseData(geminiError(error)),
  };
}

const STATUS: Record<ApiErrorCode, string> = {
  invalid_request: 'INVALID_ARGUMENT',
  invalid_api_key: 'UNAUTHENTICATED',
  // Out of credits, or over a key's limit: the API's quota status for both (402 is not retried as 429 is).
  insufficient_credits: 'RESOURCE_EXHAUSTED',
  forbidden: 'PERMISSION_DENIED',
  not_found: 'NOT_FOUND',
  model_not_found: 'NOT_FOUND',
  // Never sent here: Google's API answers a method its path does not take 404 (see error-formats.ts).
  method_not_allowed: 'NOT_FOUND',
  request_timeout: 'DEADLINE_EXCEEDED',
  conflict: 'ABORTED',
  payload_too_large: 'INVALID_ARGUMENT',
  rate_limited: 'RESOURCE_EXHAUSTED',
  headers_too_large: 'INVALID_ARGUMENT',
  provider_error: 'INTERNAL',
  provider_timeout: 'DEADLINE_EXCEEDED',
  internal_error: 'INTERNAL',
  unavailable: 'UNAVAILABLE',
};

/** Google's error body: the HTTP status as `code`, and its canonical status name. */
export const geminiError = (error: ApiError) => ({
  error: { code: error.status, message: error.message, status: STATUS[error.code] },
});

/** A catalogue model as the API's `Model`, named `models/{slug}`. */
export const modelOf = (model: CatalogueModel) => ({
  name: `models/${model.slug}`,
  baseModelId: model.slug,
  version: String(model.created),
  displayName: model.name,
  description: `${model.name}, served by the gateway (${model.slug})`,
  inputTokenLimit: model.contextLength,
  outputTokenLimit: model.maxOutputTokens,
  supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
  thinking: model.reasoning,
});

const METHODS = ['generateContent', 'streamGenerateContent', 'countTokens'] as const;

/**
 * `{model}:{method}` from the path after `models/`. The model's name may hold slashes (a catalogue
 * slug, sent unencoded by Google's clients) and colons: the method is after the last colon.
 */
export function methodCallOf(path: string): { model: string; method: (typeof METHODS)[number] } {
  const colon = path.lastIndexOf(':');
  const method = path.slice(colon + 1);
  if (colon <= 0 || !(METHODS as readonly string[]).includes(method))
    throw new ApiError(
      'not_found',
      `no such route: POST /api/v1beta/models/${path.slice(0, 200)}: the methods are :generateContent, :streamGenerateContent and :countTokens`,
    );
  return { model: path.slice(0, colon), method: method as (typeof METHODS)[number] };
}

/**
 * The catalogue model a Gemini client names: `models/` before it is the API's own prefix; a slug
 * (`vendor/model`) or a UUID names itself; a name without a slash is the slug whose part after
 * the slash it is, when only one is (Gemini CLI's `-m gpt-4o` for `openai/gpt-4o`), refused as
 * ambiguous when several are, and left to the pipeline's "not in the catalogue" when none is.
 */
export function catalogueRefOf(named: string, models: readonly Pick<CatalogueModel, 'slug'>[]): string {
  const ref = named.replace(/^models\//, '');
  if (ref.includes('/')) return ref;
  const lower = ref.toLowerCase();
  const matches = models.filter((m) => m.slug.slice(m.slug.indexOf('/') + 1).toLowerCase() === lower);
  if (matches.length > 1)
    refuse(`model "${ref.slice(0, 256)}" is ambiguous: name one of ${matches.map((m) => `"${m.slug}"`).join(', ')}`);
  return matches.length === 1 ? matches[0].slug : ref;
}
