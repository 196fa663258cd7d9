import { randomBytes } from 'node:crypto';
import type {
  CanonicalEvent,
  CanonicalImage,
  CanonicalMessage,
  CanonicalRequest,
  CanonicalToolChoice,
  Citation,
  FinishReason,
  ReasoningEffort,
  Usage,
} from '../../canonical/canonical';
import { HostError, isOutput, upstreamIdOf } from '../../canonical/canonical';
import type { HostedToolsRun } from '../../canonical/hosted-tools';
import type { HostKind, HostSettings, SseMessage, StreamDecoder, UpstreamRequest, WireLimits } from '../host-kind';

/**
 * Gemini API hosts (`generativelanguage.googleapis.com/v1beta`): `models/{model}:generateContent`
 * for a whole reply, `:streamGenerateContent?alt=sse` for a stream, the key in `x-goog-api-key`.
 */

/** A host model's name without the resource path it may be given with (`models/…`, Vertex AI's `publishers/google/models/…`). */
const bareName = (hostModel: string): string => hostModel.replace(/^(?:models\/|publishers\/google\/models\/)/, '');

/** A Gemini model's major version, by its name (`gemini-2.5-flash`, `models/gemini-3-pro-preview`); null for other names. */
const geminiVersion = (hostModel: string): number | null => {
  const version = /^gemini-(\d+)/.exec(bareName(hostModel));
  return version === null ? null : Number(version[1]);
};

/**
 * Whether a model runs Google Search in a call that also declares functions: Gemini 3 and later do,
 * with `toolConfig.includeServerSideToolInvocations` (Google's "Combine built-in tools and function
 * calling", ai.google.dev/gemini-api/docs/tool-combination, read 2026-11-26); Gemini 2.5 and older
 * refuse the call ("Tool use with function calling is unsupported by the model"), so there the
 * search is left out and announced.
 */
export const searchesBesideFunctions = (hostModel: string): boolean => (geminiVersion(hostModel) ?? 0) >= 3;

/**
 * The hosted tools this kind runs: a web search offered in any format, as Google Search grounding
 * (`tools: [{googleSearch: {}}]`), and a fetch (a messages `web_fetch_*`, a Gemini client's
 * `urlContext`) as URL context (`{urlContext: {}}`), whose pages Google bills as input tokens
 * (`toolUsePromptTokenCount`), with no per-use fee: each page retrieved is a use, priced at 0. No
 * client's body is passed whole to it (the Gemini format is not one the hosts are sent whole), so
 * every tool is translated.
 */
export const GEMINI_HOSTED_TOOLS: HostedToolsRun = {
  whole: new Set(),
  translated: new Set(['webSearch', 'webFetch']),
  besideFunctions: searchesBesideFunctions,
};

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
 * The placeholder Google documents for a call whose signature is lost (a history from another
 * model or client): Gemini 3 checks no signature on a call that carries it ("Thought signatures",
 * ai.google.dev/gemini-api/docs/thought-signatures and Vertex AI's page of the same name, read
 * 2026-11-27).
 */
export const SKIP_SIGNATURE = 'skip_thought_signature_validator';

/**
 * A model turn's parts: its text, then its calls. The thought signature the host gave the turn
 * goes back where Gemini puts it: on the first call when there are calls, else on the last part.
 * Gemini 3 refuses a turn whose first call has no signature ("Function call is missing a
 * thought_signature"), and chat-completions and Responses clients keep none: there a turn with
 * calls and no signature carries SKIP_SIGNATURE on its first call.
 */
function modelParts(message: Extract<CanonicalMessage, { role: 'assistant' }>, hostModel: string): Part[] {
  const parts: Part[] = [
    ...(message.content === '' ? [] : [{ text: message.content }]),
    ...message.toolCalls.map((call) => ({ functionCall: { name: call.name, args: argsOf(call.arguments) } })),
  ];
  const signature =
    message.reasoning?.signature || (message.toolCalls.length > 0 && (geminiVersion(hostModel) ?? 0) >= 3 ? SKIP_SIGNATURE : '');
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
function contentsOf(messages: CanonicalMessage[], hostModel: string): Content[] {
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
        parts = modelParts(message, hostModel);
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

/** The thinking a model takes: its budgets (least and most), and whether a budget of 0 turns thinking off. */
export interface ThinkingRange {
  min: number;
  max: number;
  canDisable: boolean;
}

/**
 * The thinking budgets a model takes, by its name, as Google's thinking page lists them
 * (ai.google.dev/gemini-api/docs/thinking, read 2026-11-27): 2.5 Pro 128–32,768, thinking always on
 * ("Budget 0 is invalid. This model only works in thinking mode."); 2.5 Flash 0–24,576; 2.5
 * Flash-Lite 512–24,576, or 0. Null for other models, whose budgets go as asked.
 */
export function thinkingRangeOf(hostModel: string): ThinkingRange | null {
  const name = bareName(hostModel);
  if (name.startsWith('gemini-2.5-pro')) return { min: 128, max: 32768, canDisable: false };
  if (name.startsWith('gemini-2.5-flash-lite')) return { min: 512, max: 24576, canDisable: true };
  if (name.startsWith('gemini-2.5-flash')) return { min: 1, max: 24576, canDisable: true };
  return null;
}

/** Gemini 3's Pro models, which think at `low` or `high` only and cannot stop thinking. */
const isGemini3Pro = (hostModel: string) => /^gemini-[3-9][\d.]*-pro/.test(bareName(hostModel));

/**
 * The `thinkingLevel` of an effort on Gemini 3 (Google's recommended setting there, in place of a
 * budget): the Pro models take `low` and `high`, the others `minimal` to `high`. `none` is the
 * least level: Gemini 3 cannot turn thinking off (`minimal` too may think).
 */
function thinkingLevelOf(effort: ReasoningEffort, hostModel: string): string {
  if (isGemini3Pro(hostModel)) return effort === 'medium' || effort === 'high' ? 'high' : 'low';
  return effort === 'none' ? 'minimal' : effort;
}

/** Whether a request asks for no thinking from a model that cannot stop thinking (Gemini 2.5 Pro, every Gemini 3). */
const thinkingRequired = (reasoning: CanonicalRequest['reasoning'], hostModel: string): boolean =>
  reasoning?.effort === 'none' && ((geminiVersion(hostModel) ?? 0) >= 3 || thinkingRangeOf(hostModel)?.canDisable === false);

/**
 * Thinking for a reasoning request on a model, with the thoughts shown: on Gemini 3 an effort as
 * its `thinkingLevel`; else its budget, or its effort's, within what the model takes (a 2.5 model's
 * budgets are bounded, see thinkingRangeOf); neither (a Gemini client's `includeThoughts` alone, or
 * a dynamic budget) the model's own dynamic thinking. `none` is a budget of 0, or, on a model that
 * cannot stop thinking, its least thinking (named in `x-gateway-omitted-reasoning`, see
 * geminiHost.omittedReasoning). Nothing when the client said nothing: the model thinks as it does by
 * default, its thoughts not shown.
 */
export function thinkingConfigOf(
  reasoning: CanonicalRequest['reasoning'],
  hostModel: string,
): Record<string, unknown> | undefined {
  if (reasoning === undefined) return undefined;
  const shown = reasoning.effort === 'none' ? {} : { includeThoughts: true };
  if ((geminiVersion(hostModel) ?? 0) >= 3 && reasoning.budgetTokens === undefined && reasoning.effort !== undefined)
    return { thinkingLevel: thinkingLevelOf(reasoning.effort, hostModel), ...shown };
  const range = thinkingRangeOf(hostModel);
  if (reasoning.effort === 'none') return range && !range.canDisable ? { thinkingBudget: range.min } : { thinkingBudget: 0 };
  if (reasoning.budgetTokens === undefined && reasoning.effort === undefined) return { includeThoughts: true };
  const wanted = reasoning.budgetTokens ?? EFFORT_BUDGET[reasoning.effort ?? 'medium'];
  return { thinkingBudget: range ? Math.min(Math.max(wanted, range.min), range.max) : wanted, includeThoughts: true };
}

/**
 * Structured output as generateContent takes it: `responseMimeType` "application/json", alone (JSON
 * mode) or beside one schema: a Gemini client's `responseSchema` (OpenAPI subset) as it gave it, else
 * `responseJsonSchema` (JSON Schema). The API has no name, description or strictness for it.
 */
function structuredOutputOf(format: CanonicalRequest['outputFormat']): Record<string, unknown> {
  if (format === undefined) return {};
  if (format.type === 'json_object') return { responseMimeType: 'application/json' };
  return format.openApiSchema
    ? { responseMimeType: 'application/json', responseSchema: format.openApiSchema }
    : { responseMimeType: 'application/json', responseJsonSchema: format.schema };
}

/**
 * The request for a model, on the Gemini API or (`vertex`) Vertex AI's Google publisher, whose
 * `toolConfig` has no `includeServerSideToolInvocations` ("not supported in Vertex AI", as
 * Google's js-genai `ToolConfig` reference says, read 2026-11-27).
 */
export function geminiRequest(
  request: CanonicalRequest,
  hostModel: string,
  apiKey: string | null,
  vertex = false,
): UpstreamRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (apiKey !== null) headers['x-goog-api-key'] = apiKey;
  const model = encodeURIComponent(hostModel);
  const path = request.stream ? `/models/${model}:streamGenerateContent?alt=sse` : `/models/${model}:generateContent`;
  const body: Record<string, unknown> = { contents: contentsOf(request.messages, hostModel) };
  // Every instruction, those given mid-conversation after the others (their position is lost, their text is not).
  const system = [
    ...request.system,
    ...request.messages.flatMap((message) => (message.role === 'system' ? [message.content] : [])),
  ].filter((text) => text !== '');
  if (system.length > 0) body.systemInstruction = { parts: [{ text: system.join('\n\n') }] };
  const tools: Record<string, unknown>[] = [];
  if (request.tools.length > 0) {
    tools.push({
      functionDeclarations: request.tools.map((tool) => ({
        name: tool.name,
        ...(tool.description ? { description: tool.description } : {}),
        // JSON Schema as the client wrote it: the API's own `parameters` takes only an OpenAPI subset.
        parametersJsonSchema: tool.parameters,
      })),
    });
    // Inside the branch: a tool choice without functions means nothing to the API (it chooses
    // among functions only: a search the client requires is offered, not forced).
    if (request.toolChoice !== undefined) body.toolConfig = toolConfigOf(request.toolChoice);
  }
  // A web search offered in another format, as Google Search grounding. The API takes no bound on
  // its searches: a count above the uses held for is billed at the bound (see usage-check.ts).
  if (request.carriedTools?.classes.includes('webSearch')) {
    tools.push({ googleSearch: {} });
    // Beside functions (a model admission let run both, see searchesBesideFunctions), the Gemini API asks for this.
    if (request.tools.length > 0 && !vertex)
      body.toolConfig = { ...(body.toolConfig as object | undefined), includeServerSideToolInvocations: true };
  }
  if (request.carriedTools?.classes.includes('webFetch')) tools.push({ urlContext: {} });
  if (tools.length > 0) body.tools = tools;
  const config: Record<string, unknown> = { candidateCount: 1 };
  if (request.maxTokens !== undefined) config.maxOutputTokens = request.maxTokens;
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.topP !== undefined) config.topP = request.topP;
  if (request.topK !== undefined) config.topK = request.topK;
  if (request.stop.length > 0) config.stopSequences = request.stop;
  const thinking = thinkingConfigOf(request.reasoning, hostModel);
  if (thinking) config.thinkingConfig = thinking;
  Object.assign(config, structuredOutputOf(request.outputFormat));
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
 * has no `candidatesTokenCount`. `webSearches`: the grounding searches billed (see Grounding).
 */
export function geminiUsageOf(metadata: Record<string, unknown>, webSearches = 0, webFetches = 0): Usage {
  const cached = count(metadata.cachedContentTokenCount, 0);
  return {
    inputTokens: count(metadata.promptTokenCount, NaN) - cached + count(metadata.toolUsePromptTokenCount, 0),
    cacheReadTokens: cached,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: count(metadata.candidatesTokenCount, 0) + count(metadata.thoughtsTokenCount, 0),
    reasoningTokens: shownCount(metadata.thoughtsTokenCount),
    ...(webSearches > 0 || webFetches > 0
      ? {
          hostedToolUses: {
            ...(webSearches > 0 ? { webSearch: webSearches } : {}),
            ...(webFetches > 0 ? { webFetch: webFetches } : {}),
          },
        }
      : {}),
  };
}

/**
 * Whether a model's Google Search grounding is billed per search query (Gemini 3 and later) rather
 * than per grounded prompt (Gemini 2.5 and older). As Google's grounding and pricing pages say
 * (ai.google.dev/gemini-api/docs/google-search and /pricing, as quoted on
 * discuss.ai.google.dev/t/168136 and /t/102927, read 2026-11-26): Gemini 3 bills each search query
 * it runs, at $14 per 1,000, counting unique queries and ignoring empty ones; Gemini 2.5 bills a
 * request that used the tool once, at $35 per 1,000 grounded prompts, however many queries it ran.
 * Vertex AI bills its Gemini models' grounding alike.
 */
export const billedPerQuery = (hostModel: string): boolean => (geminiVersion(hostModel) ?? 0) >= 3;

/**
 * The Google Search grounding of one reply, as its candidates report it (a stream may report it on
 * more than one chunk): the distinct non-empty queries run, and whether the reply was grounded at
 * all (queries or pages). Its uses are counted as Google bills them, by the model (billedPerQuery).
 */
class Grounding {
  private readonly queries = new Set<string>();
  private grounded = false;
  /** The citations already given, so a chunk repeating them gives none twice. */
  private readonly cited = new Set<string>();

  constructor(private readonly perQuery: boolean) {}

  /** Reads a candidate's `groundingMetadata`; true when it changed the count of uses. */
  read(metadata: Record<string, unknown>): boolean {
    const before = this.uses();
    for (const query of Array.isArray(metadata.webSearchQueries) ? metadata.webSearchQueries : [])
      if (typeof query === 'string' && query.trim() !== '') this.queries.add(query);
    this.grounded ||= this.queries.size > 0 || (Array.isArray(metadata.groundingChunks) && metadata.groundingChunks.length > 0);
    return this.uses() !== before;
  }

  /** Web searches billed: each distinct query (Gemini 3), else one for a grounded prompt. */
  uses(): number {
    return this.perQuery ? this.queries.size : this.grounded ? 1 : 0;
  }

  /**
   * `groundingSupports` as citations of the reply's `text`: each segment (its offsets in UTF-8
   * bytes of the reply's text, as Google's own examples index it) cites each web page its chunk
   * indices name. Supports of other sources (maps, retrieval) have no URL to cite.
   */
  citations(metadata: Record<string, unknown>, text: string): Citation[] {
    const chunks = Array.isArray(metadata.groundingChunks) ? metadata.groundingChunks : [];
    const bytes = Buffer.from(text, 'utf8');
    const charAt = (offset: unknown) =>
      bytes.subarray(0, Number.isSafeInteger(offset) ? Math.max(0, offset as number) : 0).toString('utf8').length;
    const citations: Citation[] = [];
    for (const support of Array.isArray(metadata.groundingSupports) ? metadata.groundingSupports.filter(isObject) : []) {
      const segment = isObject(support.segment) ? support.segment : {};
      const start = charAt(segment.startIndex);
      const end = charAt(segment.endIndex);
      if (end <= start) continue;
      for (const index of Array.isArray(support.groundingChunkIndices) ? support.groundingChunkIndices : []) {
        const chunk: unknown = Number.isSafeInteger(index) ? chunks[index as number] : undefined;
        const web = isObject(chunk) && isObject(chunk.web) ? chunk.web : null;
        if (!web || typeof web.uri !== 'string' || web.uri === '') continue;
        const key = `${start}:${end}:${web.uri}`;
        if (this.cited.has(key)) continue;
        this.cited.add(key);
        citations.push({ type: 'citation', url: web.uri, title: str(web.title), start, end });
      }
    }
    return citations;
  }
}

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
  /** The grounding reported so far (a stream may report it before its usage). */
  private readonly grounding: Grounding;
  /** The reply's text so far, which grounding supports index. */
  private text = '';
  /** The pages URL context retrieved (a stream may report them on more than one chunk). */
  private readonly fetched = new Set<string>();
  private lastUsage: Record<string, unknown> | null = null;

  constructor(hostModel: string) {
    this.grounding = new Grounding(billedPerQuery(hostModel));
  }

  read(response: Record<string, unknown>): { events: CanonicalEvent[]; ended: boolean } {
    if (response.error !== undefined) throw new HostError('upstream_error', errorText(response.error));
    const candidate = Array.isArray(response.candidates) && isObject(response.candidates[0]) ? response.candidates[0] : null;
    const events: CanonicalEvent[] = [];
    let ended = false;
    if (candidate) {
      const content = isObject(candidate.content) ? candidate.content : {};
      for (const part of Array.isArray(content.parts) ? content.parts.filter(isObject) : []) events.push(...this.part(part));
      // The passages the grounding cites, once their text has come and before the reply ends.
      if (isObject(candidate.groundingMetadata)) events.push(...this.grounding.citations(candidate.groundingMetadata, this.text));
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
    const grounding = candidate && isObject(candidate.groundingMetadata) ? candidate.groundingMetadata : null;
    const searched = grounding !== null && this.grounding.read(grounding);
    const fetched = candidate !== null && this.readFetches(candidate);
    if (isObject(response.usageMetadata)) this.lastUsage = response.usageMetadata;
    if (this.lastUsage && (isObject(response.usageMetadata) || searched || fetched))
      events.push({ type: 'usage', usage: geminiUsageOf(this.lastUsage, this.grounding.uses(), this.fetched.size) });
    return { events, ended };
  }

  /** URL context's `urlContextMetadata.urlMetadata`: each page retrieved (status SUCCESS) a fetch; true when it added one. */
  private readFetches(candidate: Record<string, unknown>): boolean {
    const metadata = isObject(candidate.urlContextMetadata) ? candidate.urlContextMetadata : {};
    const before = this.fetched.size;
    for (const page of Array.isArray(metadata.urlMetadata) ? metadata.urlMetadata.filter(isObject) : [])
      if (page.urlRetrievalStatus === 'URL_RETRIEVAL_STATUS_SUCCESS' && typeof page.retrievedUrl === 'string')
        this.fetched.add(page.retrievedUrl);
    return this.fetched.size !== before;
  }

  private part(part: Record<string, unknown>): CanonicalEvent[] {
    const signature = typeof part.thoughtSignature === 'string' && part.thoughtSignature !== '' ? part.thoughtSignature : null;
    const signed: CanonicalEvent[] = signature ? [{ type: 'reasoning', text: '', signature }] : [];
    if (part.thought === true) return [{ type: 'reasoning', text: str(part.text), ...(signature ? { signature } : {}) }];
    if (typeof part.text === 'string') {
      this.text += part.text;
      return [...signed, ...(part.text === '' ? [] : [{ type: 'text', text: part.text } as const])];
    }
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

/** A whole `GenerateContentResponse` (and itself, passed through, with its id); `hostModel` the model called. */
function decodeReply(body: string, passThrough = false, _settings?: HostSettings, hostModel = ''): CanonicalEvent[] {
  const parsed = parseObject(body, 'a reply');
  if (parsed.error === undefined && !Array.isArray(parsed.candidates) && !isObject(parsed.promptFeedback))
    throw new HostError('malformed', 'upstream sent a reply without candidates');
  const { events } = new ResponseReader(hostModel).read(parsed);
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
  private readonly reader: ResponseReader;
  private opened = false;
  /** A chunk said why the reply finished. */
  private finished = false;

  constructor(
    private readonly passThrough: boolean,
    hostModel: string,
  ) {
    this.reader = new ResponseReader(hostModel);
  }

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

/**
 * What generateContent refuses, on the Gemini API and Vertex AI alike (their references, and the
 * google-genai SDK's FunctionDeclaration): more than 5 `stopSequences`; a function name not starting
 * with a letter or an underscore, or holding other than letters, digits, `_ . : -`, or over 128.
 */
export const GENERATE_CONTENT_LIMITS: WireLimits = {
  stopSequences: 5,
  toolNames: {
    pattern: /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/,
    rule: 'a letter or an underscore, then letters, digits, underscores, dots, colons and dashes, at most 128 characters',
  },
};

/** Gemini before 3 refuses structured output beside function declarations ("Function calling with a response mime type 'application/json' is unsupported"). */
const GENERATE_CONTENT_LIMITS_BEFORE_3: WireLimits = {
  ...GENERATE_CONTENT_LIMITS,
  outputFormats: {
    takes: ['json_object', 'json_schema'],
    field: 'generationConfig.responseMimeType',
    notWithFunctionTools: true,
  },
};

/** The limits of a model on generateContent: Gemini 1.x and 2.x take fewer combinations than 3. */
export const generateContentLimits = (hostModel: string): WireLimits =>
  /gemini-[12][.-]/.test(hostModel) ? GENERATE_CONTENT_LIMITS_BEFORE_3 : GENERATE_CONTENT_LIMITS;

export const geminiHost: HostKind<'gemini'> = {
  name: 'gemini',
  limits: (hostModel) => generateContentLimits(hostModel),
  buildRequest: (request, hostModel, apiKey) => geminiRequest(request, hostModel, apiKey),
  // No thinking asked of a model that cannot stop thinking: it thinks the least it can.
  omittedReasoning: (request, hostModel) => (thinkingRequired(request.reasoning, hostModel) ? 'thinking_required' : null),
  decoder: (passThrough = false, _settings, hostModel = '') => new GeminiDecoder(passThrough, hostModel),
  decodeReply,
  errorMessage,
  hostedTools: GEMINI_HOSTED_TOOLS,
};
