// The Gemini API's wire for the fake upstream (fake-upstream.ts): `models/{model}:generateContent`
// and `:streamGenerateContent?alt=sse`, as Google documents them today. The model comes from the path.
import { randomBytes } from 'node:crypto';
import type { FakeReply, FakeUsage } from '../fake-upstream';
import { DEFAULT_SEARCH, type FakeSearch } from './search';

/** The request paths the Gemini API answers (under the host's `/v1beta`): the model, and whether streamed. */
export function geminiRoute(path: string): { model: string; stream: boolean } | null {
  const route = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
  return route ? { model: decodeURIComponent(route[1]), stream: route[2] === 'streamGenerateContent' } : null;
}

/** A thought signature (opaque base64 on the real API): one per thinking text, so tests can expect it back. */
export const thoughtSignatureOf = (thinking: string) => Buffer.from(`gemini-thought:${thinking}`).toString('base64');

interface Frame {
  data: string;
  piece?: boolean;
}

type Finish = NonNullable<FakeReply['finish']>;

/** Gemini has no stop-sequence reason of its own: a matched stop sequence is a STOP; calls made end with STOP too. */
const FINISH: Record<Finish, string> = { stop: 'STOP', length: 'MAX_TOKENS', tool_calls: 'STOP', stop_sequence: 'STOP' };

const finishOf = (r: FakeReply): Finish => r.finish ?? (r.toolCalls?.length ? 'tool_calls' : 'stop');

const parseArgs = (s: string) => {
  try {
    return JSON.parse(s);
  } catch {
    return {};
  }
};

/**
 * `usageMetadata` with every field the API sends. `input` is the uncached input
 * (`promptTokenCount` counts the cached content's tokens too); `output` includes the thoughts
 * (`reasoning`), which the API counts apart from the candidates'. Tool-use prompts (`toolPrompt`)
 * are the input the host's own tools added. The API reports no cache writes.
 */
export function geminiUsage(u: FakeUsage) {
  if (u.cacheWrite || u.cacheWrite1h) throw new Error('Gemini usage has no cache writes');
  const { cacheRead = 0, reasoning = 0, toolPrompt = 0 } = u;
  const prompt = u.input + cacheRead;
  const candidates = u.output - reasoning;
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    totalTokenCount: prompt + u.output + toolPrompt,
    ...(cacheRead ? { cachedContentTokenCount: cacheRead } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
    ...(cacheRead ? { cacheTokensDetails: [{ modality: 'TEXT', tokenCount: cacheRead }] } : {}),
    candidatesTokensDetails: [{ modality: 'TEXT', tokenCount: candidates }],
    ...(toolPrompt
      ? { toolUsePromptTokenCount: toolPrompt, toolUsePromptTokensDetails: [{ modality: 'TEXT', tokenCount: toolPrompt }] }
      : {}),
    ...(reasoning ? { thoughtsTokenCount: reasoning } : {}),
  };
}

/** The address Google gives a grounding page by: its redirect, not the page's own URL. */
export const groundingRedirect = (url: string) =>
  `https://vertexaisearch.cloud.google.com/grounding-api-redirect/${Buffer.from(url).toString('base64url')}`;

/**
 * Google Search grounding, as a reply that searched carries it: the queries run (`queries`, else
 * each search's), the entry point (the search chips' HTML), each page found as a chunk (its redirect
 * URI, its site as the title), and one support per sentence of the text, citing every page: the
 * segment's offsets in UTF-8 bytes of the reply's text, a start of 0 left out as proto3 JSON does.
 */
function groundingOf(searches: FakeSearch[], queries: string[], text: string) {
  const supports: object[] = [];
  let offset = 0;
  for (const sentence of text.split(/(?<=[.!?])\s+/)) {
    const start = Buffer.byteLength(text.slice(0, text.indexOf(sentence, offset)));
    offset = text.indexOf(sentence, offset) + sentence.length;
    if (sentence === '') continue;
    supports.push({
      segment: { ...(start ? { startIndex: start } : {}), endIndex: start + Buffer.byteLength(sentence), text: sentence },
      groundingChunkIndices: searches.map((_, i) => i),
    });
  }
  return {
    searchEntryPoint: {
      renderedContent: `<style>.container{display:flex}</style><div class="container">${queries
        .filter((q) => q !== '')
        .map((q) => `<a class="chip" href="https://www.google.com/search?q=${encodeURIComponent(q)}">${q}</a>`)
        .join('')}</div>`,
    },
    groundingChunks: searches.map((s) => ({ web: { uri: groundingRedirect(s.url), title: new URL(s.url).hostname } })),
    groundingSupports: supports,
    webSearchQueries: queries,
  };
}

/** A call as the API writes it, with its id (as Gemini 3 models give one; a call without an id is the decoder's to name). */
const callOf = (call: { id: string; name: string; arguments: string }) => ({
  ...(call.id ? { id: call.id } : {}),
  name: call.name,
  args: parseArgs(call.arguments),
});

/** Where a reply's `wireUsage` goes: the caller (fake-upstream.ts) puts the text in place of this string. */
type UsageSlot = (reply: FakeReply) => unknown;

/**
 * A reply's parts: its thoughts (summaries, `thought: true`), its text, its calls (whole: the API
 * streams no call in pieces; an empty `id` leaves the call without one, as Gemini 2.5 sends them). The thought signature goes where the API puts it: on the first call,
 * else on the last part.
 */
function partsOf(reply: FakeReply): Record<string, unknown>[] {
  const parts: Record<string, unknown>[] = [];
  if (reply.thinking) parts.push({ text: reply.thinking, thought: true });
  if (reply.text || !reply.toolCalls?.length) parts.push({ text: reply.text ?? '' });
  for (const call of reply.toolCalls ?? []) parts.push({ functionCall: callOf(call) });
  if (reply.thinking) {
    const first = parts.findIndex((p) => 'functionCall' in p);
    const at = first === -1 ? parts.length - 1 : first;
    parts[at] = { ...parts[at], thoughtSignature: thoughtSignatureOf(reply.thinking) };
  }
  return parts;
}

/** A `GenerateContentResponse`: one candidate, with its finish when it has one, and the usage and ids every response carries. */
function response(
  req: any,
  parts: Record<string, unknown>[],
  id: string,
  end: { finish?: string; usage?: unknown; grounding?: object; urlContext?: object },
) {
  return {
    candidates: [
      {
        content: { parts, role: 'model' },
        ...(end.finish ? { finishReason: end.finish } : {}),
        ...(end.grounding ? { groundingMetadata: end.grounding } : {}),
        ...(end.urlContext ? { urlContextMetadata: end.urlContext } : {}),
        index: 0,
      },
    ],
    ...(end.usage !== undefined ? { usageMetadata: end.usage } : {}),
    modelVersion: req.model,
    responseId: id,
  };
}

const responseId = () => randomBytes(12).toString('base64url');

const usageFor = (reply: FakeReply, slot: UsageSlot) =>
  reply.wireUsage !== undefined ? slot(reply) : reply.usage ? geminiUsage(reply.usage) : undefined;

/**
 * The grounding of a reply to a request offering Google Search (none otherwise): its `searches`
 * (DEFAULT_SEARCH without), its `webSearchQueries` when given (as Gemini 3 sends them: empty or
 * repeated queries too), else each search's query.
 */
function groundingFor(req: any, reply: FakeReply) {
  const offered = Array.isArray(req.tools) && req.tools.some((t: any) => t?.googleSearch !== undefined);
  if (!offered) return undefined;
  const searches = reply.searches ?? [DEFAULT_SEARCH];
  return groundingOf(searches, reply.webSearchQueries ?? searches.map((s) => s.query), reply.text ?? '');
}

/**
 * URL context's metadata for a request offering it (none otherwise): each `https:` URL of the
 * request's text retrieved, as Google reports the pages it read.
 */
function urlContextFor(req: any) {
  const offered = Array.isArray(req.tools) && req.tools.some((t: any) => t?.urlContext !== undefined);
  if (!offered) return undefined;
  const urls = new Set<string>(JSON.stringify(req.contents ?? []).match(/https:\/\/[^\s"\\]+/g) ?? []);
  return { urlMetadata: [...urls].map((retrievedUrl) => ({ retrievedUrl, urlRetrievalStatus: 'URL_RETRIEVAL_STATUS_SUCCESS' })) };
}

export function geminiMessage(req: any, reply: FakeReply, slot: UsageSlot) {
  return response(req, partsOf(reply), responseId(), {
    finish: FINISH[finishOf(reply)],
    usage: usageFor(reply, slot),
    grounding: groundingFor(req, reply),
    urlContext: urlContextFor(req),
  });
}

/**
 * A stream as the API sends it: each chunk a whole response carrying the parts generated since
 * the last (text per word, thoughts per word, each call whole), every chunk with the usage so far
 * (the prompt's from the first; the output's with the last), and a last chunk with the finish
 * reason, the whole usage and the grounding (the signature of a reply without calls on its empty text
 * part, as the API sends it). No end marker: the connection closes.
 */
export function geminiStream(
  req: any,
  reply: FakeReply,
  slot: UsageSlot,
  pieces?: number,
  split?: (t: string, n?: number) => string[],
) {
  const id = responseId();
  const whole = usageFor(reply, slot);
  const promptOnly =
    reply.wireUsage === undefined && reply.usage
      ? (({ promptTokenCount, promptTokensDetails, cachedContentTokenCount }) => ({
          promptTokenCount,
          totalTokenCount: promptTokenCount,
          promptTokensDetails,
          ...(cachedContentTokenCount ? { cachedContentTokenCount } : {}),
        }))(geminiUsage(reply.usage))
      : whole;
  const chunk = (parts: Record<string, unknown>[], piece = true): Frame => ({
    data: JSON.stringify(response(req, parts, id, { usage: promptOnly })),
    piece,
  });
  const words = split ?? ((t: string) => [t]);
  const signature = reply.thinking ? thoughtSignatureOf(reply.thinking) : null;
  const body: Frame[] = [
    ...words(reply.thinking ?? '').map((text) => chunk([{ text, thought: true }])),
    ...words(reply.text ?? '', pieces).map((text) => chunk([{ text }])),
  ];
  (reply.toolCalls ?? []).forEach((call, i) =>
    body.push(
      chunk([
        {
          functionCall: callOf(call),
          ...(i === 0 && signature ? { thoughtSignature: signature } : {}),
        },
      ]),
    ),
  );
  const lastParts = signature && !reply.toolCalls?.length ? [{ text: '', thoughtSignature: signature }] : [{ text: '' }];
  const tail: Frame[] = [
    {
      data: JSON.stringify(
        response(req, lastParts, id, {
          finish: FINISH[finishOf(reply)],
          usage: whole,
          grounding: groundingFor(req, reply),
          urlContext: urlContextFor(req),
        }),
      ),
    },
  ];
  return { head: [] as Frame[], body, tail };
}

/** The API's status names, by HTTP status. */
const STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** The API's error body. */
export function geminiError(status: number, message?: string) {
  return {
    error: {
      code: status,
      message: message ?? `Fake upstream error (HTTP ${status}).`,
      status: STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION'),
    },
  };
}

/** A chunk whose data is truncated JSON. */
export const GEMINI_MALFORMED = 'data: {"candidates": [{"content": {"parts": [{"text": "trunc\n\n';

/** How the API reports a failure after the 200 has gone out: an error body as a chunk. */
export const GEMINI_STREAM_ERROR = `data: ${JSON.stringify(geminiError(500, 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting'))}\n\n`;

/** The model's name without the API's prefixes (`models/`, Vertex AI's `publishers/google/models/`). */
const bareModel = (model: string) => model.replace(/^(?:models\/|publishers\/google\/models\/)/, '');

/** Gemini 3 and later, by name. */
const isGemini3 = (model: string) => /^gemini-(?:[3-9]|\d{2,})/.test(bareModel(model));

/**
 * The thinking budgets a model takes, as Google's thinking page lists them
 * (ai.google.dev/gemini-api/docs/thinking): 2.5 Pro 128–32,768 and never off; 2.5 Flash 0–24,576;
 * 2.5 Flash-Lite 512–24,576 or 0; Gemini 3 Pro never off. -1 (dynamic) is taken by all of them.
 */
function budgetRange(model: string): { min: number; max: number; off: boolean } | null {
  const name = bareModel(model);
  if (name.startsWith('gemini-2.5-pro')) return { min: 128, max: 32768, off: false };
  if (name.startsWith('gemini-2.5-flash-lite')) return { min: 512, max: 24576, off: true };
  if (name.startsWith('gemini-2.5-flash')) return { min: 1, max: 24576, off: true };
  if (/^gemini-[3-9][\d.]*-pro/.test(name)) return { min: 1, max: Infinity, off: false };
  return null;
}

/**
 * Where the current turn starts: the last user content holding something other than function
 * responses (Gemini 3 checks the signatures of the model turns after it).
 */
function currentTurnStart(contents: any[]): number {
  for (let i = contents.length - 1; i >= 0; i--) {
    const parts: any[] = Array.isArray(contents[i]?.parts) ? contents[i].parts : [];
    if (contents[i]?.role === 'user' && parts.some((p) => p?.functionResponse === undefined)) return i;
  }
  return 0;
}

/**
 * What generateContent refuses of stop sequences (up to 5) and function names (a letter or an
 * underscore, then letters, digits, `_ . : -`, at most 128), on the Gemini API and Vertex AI alike.
 */
function generateContentLimitsProblem(body: any): string | null {
  const stops = body?.generationConfig?.stopSequences;
  if (Array.isArray(stops) && stops.length > 5)
    return `* GenerateContentRequest.generation_config.stop_sequences: the number of stop sequences must not exceed 5, got ${stops.length}.`;
  const tools: any[] = Array.isArray(body?.tools) ? body.tools : [];
  for (const [t, tool] of tools.entries()) {
    const declarations: any[] = Array.isArray(tool?.functionDeclarations) ? tool.functionDeclarations : [];
    for (const [d, declaration] of declarations.entries()) {
      const name = declaration?.name;
      if (typeof name === 'string' && !/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/.test(name))
        return (
          `* GenerateContentRequest.tools[${t}].function_declarations[${d}].name: Invalid function name. Must start with ` +
          'a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or ' +
          'dashes (-), with a maximum length of 128.'
        );
    }
  }
  return null;
}

/**
 * What the Gemini API (and Vertex AI's Google publisher, `vertex`) refuses, whatever the test
 * configured, with Google's own messages: a Gemini 3 model turn of the current turn whose first
 * call has no `thoughtSignature`; a thinking budget the model does not take (0 for a model that
 * only thinks, or out of its range); `thinkingLevel` on Gemini 2.5; on Vertex AI,
 * `toolConfig.includeServerSideToolInvocations`, a field it does not have; the limits above. Null: none of these.
 */
export function geminiProblem(model: string, body: any, vertex: boolean): string | null {
  const limit = generateContentLimitsProblem(body);
  if (limit) return limit;
  if (vertex && body?.toolConfig?.includeServerSideToolInvocations !== undefined)
    return 'Invalid JSON payload received. Unknown name "includeServerSideToolInvocations" at \'tool_config\': Cannot find field.';
  const thinking = body?.generationConfig?.thinkingConfig;
  const budget = thinking?.thinkingBudget;
  const range = budgetRange(model);
  if (typeof budget === 'number' && budget !== -1 && range) {
    if (budget === 0 && !range.off) return 'Budget 0 is invalid. This model only works in thinking mode.';
    if (budget !== 0 && (budget < range.min || budget > range.max))
      return `The thinking budget ${budget} is invalid. Please choose a value between ${range.min} and ${range.max}.`;
  }
  if (thinking?.thinkingLevel !== undefined && bareModel(model).startsWith('gemini-2'))
    return 'Thinking level is not supported for this model.';
  if (isGemini3(model) && Array.isArray(body?.contents)) {
    const contents: any[] = body.contents;
    for (let i = currentTurnStart(contents); i < contents.length; i++) {
      if (contents[i]?.role !== 'model') continue;
      const call = (contents[i].parts ?? []).find((p: any) => p?.functionCall !== undefined);
      if (call && typeof call.thoughtSignature !== 'string')
        return (
          'Function call is missing a thought_signature in functionCall parts. This is required for tools to work ' +
          'correctly, and missing thought_signature may lead to degraded model performance. Additional data, function ' +
          `call \`default_api:${call.functionCall.name}\` , position ${i + 1}. Please refer to ` +
          'https://ai.google.dev/gemini-api/docs/thought-signatures for more details.'
        );
    }
  }
  return null;
}
