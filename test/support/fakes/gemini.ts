// The Gemini API's wire for the fake upstream (fake-upstream.ts): `models/{model}:generateContent`
// and `:streamGenerateContent?alt=sse`, as Google documents them today. The model comes from the path.
import { randomBytes } from 'node:crypto';
import type { FakeReply, FakeUsage } from '../fake-upstream';

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

/** Google Search grounding, as a reply that searched carries it: the queries run, the pages found, the entry point. */
const groundingOf = (queries: string[]) => ({
  webSearchQueries: queries,
  searchEntryPoint: { renderedContent: `<div class="container">${queries.join(' · ')}</div>` },
  groundingChunks: queries.map((q, i) => ({
    web: { uri: `https://vertexaisearch.cloud.google.com/grounding-api-redirect/${i}`, title: q },
  })),
  groundingSupports: [],
});

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
  end: { finish?: string; usage?: unknown; grounding?: object },
) {
  return {
    candidates: [
      {
        content: { parts, role: 'model' },
        ...(end.finish ? { finishReason: end.finish } : {}),
        ...(end.grounding ? { groundingMetadata: end.grounding } : {}),
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

const groundingFor = (reply: FakeReply) => (reply.webSearchQueries ? groundingOf(reply.webSearchQueries) : undefined);

export function geminiMessage(req: any, reply: FakeReply, slot: UsageSlot) {
  return response(req, partsOf(reply), responseId(), {
    finish: FINISH[finishOf(reply)],
    usage: usageFor(reply, slot),
    grounding: groundingFor(reply),
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
        response(req, lastParts, id, { finish: FINISH[finishOf(reply)], usage: whole, grounding: groundingFor(reply) }),
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
