// Azure OpenAI as the fake upstream speaks it: the OpenAI formats (chat completions, Responses,
// embeddings) at Azure's paths, with Azure's own parts — the api-version its dated routes require,
// the api-key header or an Entra ID bearer token, the content filter's results on the prompt (a first
// stream chunk with no choices) and on each choice, and Azure's error bodies (429 with retry-after).
import type { IncomingMessage } from 'node:http';
import type { FakeFormat, FakeUsage, Frame } from '../fake-upstream';

/** What the fake answers an Azure path: a refusal before any model is involved, or the format and deployment it serves. */
export type AzureRoute =
  | { refusal: { status: number; body: unknown; headers?: Record<string, string> } }
  | {
      /** The OpenAI wire underneath: its failure frames are the fake's (see MALFORMED, STREAM_ERROR). */
      api: 'openai' | 'responses' | 'embeddings';
      /** The deployment named (by the path on the deployments route, by the body's model on the v1 route). */
      model: string;
      /** The wire format, with Azure's additions; none for embeddings. */
      format: FakeFormat | null;
    };

const SAFE = { filtered: false, severity: 'safe' };
const UNDETECTED = { filtered: false, detected: false };

/** The content filter's verdict on a prompt that passed, as Azure annotates it. */
const promptFilterResults = () => [
  {
    prompt_index: 0,
    content_filter_results: { hate: SAFE, jailbreak: UNDETECTED, self_harm: SAFE, sexual: SAFE, violence: SAFE },
  },
];

/** The content filter's verdict on output that passed (or, with `filtered`, the one category that stopped it). */
export function completionFilterResults(filtered?: { category: 'hate' | 'self_harm' | 'sexual' | 'violence'; severity: string }) {
  return {
    hate: SAFE,
    protected_material_code: UNDETECTED,
    protected_material_text: UNDETECTED,
    self_harm: SAFE,
    sexual: SAFE,
    violence: SAFE,
    ...(filtered ? { [filtered.category]: { filtered: true, severity: filtered.severity } } : {}),
  };
}

/** The first chunk of every Azure stream: the prompt's filter results, with no choices (and no id, model or object). */
const promptFilterChunk = () =>
  JSON.stringify({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: promptFilterResults() });

/** A chat-completions chunk annotated as Azure does: content with the filter's results, other chunks with none (`{}`). */
function annotated(frame: Frame): Frame {
  if (frame.data === '[DONE]') return frame;
  const chunk = JSON.parse(frame.data);
  if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) return frame;
  chunk.choices = chunk.choices.map((choice: any) => ({
    ...choice,
    content_filter_results:
      typeof choice.delta?.content === 'string' && choice.delta.content !== '' ? completionFilterResults() : {},
  }));
  return { ...frame, data: JSON.stringify(chunk) };
}

const ACCESS_DENIED =
  'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.';

/** How many seconds a 429 asks to wait. */
export const AZURE_RETRY_AFTER_SECONDS = 2;

/**
 * Azure's error bodies: its own codes and sentences for what its front door refuses, the model
 * service's OpenAI-style bodies otherwise; each sentence ends with the fake's mark, as every fake
 * format's error does, so a test can see the host's words reach the caller.
 */
export function azureError(status: number, message?: string) {
  const said = (azure: string) => message ?? `${azure} Fake upstream error (HTTP ${status}).`;
  if (status === 401) return { error: { code: '401', message: said(ACCESS_DENIED) } };
  if (status === 404)
    return {
      error: {
        code: 'DeploymentNotFound',
        message: said(
          'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.',
        ),
      },
    };
  if (status === 429)
    return {
      error: {
        code: '429',
        message: said(
          `Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current AIServices S0 pricing tier. Please retry after ${AZURE_RETRY_AFTER_SECONDS} seconds.`,
        ),
      },
    };
  if (status === 503)
    return {
      error: {
        code: 'ServiceUnavailable',
        message: said('The service is temporarily unable to process your request. Please try again later.'),
      },
    };
  if (status >= 500)
    return {
      error: {
        message: said('The server had an error while processing your request. Sorry about that!'),
        type: 'server_error',
        param: null,
        code: null,
      },
    };
  return { error: { message: said('The request is invalid.'), type: 'invalid_request_error', param: null, code: null } };
}

/** A 429's headers: when to try again, and the limits spent. */
const errorHeaders = (status: number): Record<string, string> =>
  status === 429
    ? {
        'retry-after': String(AZURE_RETRY_AFTER_SECONDS),
        'retry-after-ms': String(AZURE_RETRY_AFTER_SECONDS * 1000),
        'x-ratelimit-remaining-requests': '0',
        'x-ratelimit-remaining-tokens': '0',
      }
    : {};

/** The 400 Azure answers a prompt its content filter refuses, naming the category and severity that did. */
export function azurePromptFiltered(category: 'hate' | 'self_harm' | 'sexual' | 'violence', severity: string): string {
  return JSON.stringify({
    error: {
      message:
        "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
      type: null,
      param: 'prompt',
      code: 'content_filter',
      status: 400,
      innererror: {
        code: 'ResponsibleAIPolicyViolation',
        content_filter_result: {
          hate: SAFE,
          jailbreak: UNDETECTED,
          self_harm: SAFE,
          sexual: SAFE,
          violence: SAFE,
          [category]: { filtered: true, severity },
        },
      },
    },
  });
}

/** Usage as Azure reports it on chat completions (OpenAI's fields: cached input within prompt_tokens, reasoning within completion_tokens). */
function chatUsage(u: FakeUsage) {
  const prompt = u.input + (u.cacheRead ?? 0);
  return {
    completion_tokens: u.output,
    completion_tokens_details: {
      accepted_prediction_tokens: 0,
      audio_tokens: 0,
      reasoning_tokens: u.reasoning ?? 0,
      rejected_prediction_tokens: 0,
    },
    prompt_tokens: prompt,
    prompt_tokens_details: { audio_tokens: 0, cached_tokens: u.cacheRead ?? 0 },
    total_tokens: prompt + u.output,
  };
}

/**
 * A completion the content filter stopped, as Azure sends it: streamed, the prompt's filter chunk,
 * the words before the filter stepped in, a last choice chunk finishing with `content_filter` (the
 * category that stopped it marked), the usage chunk and `[DONE]`; whole, a message without content
 * finishing so. For a `verbatim` behaviour.
 */
export function azureFilteredCompletion(model: string, delivered: string[], usage: FakeUsage, streamed: boolean): string {
  const id = 'chatcmpl-filtered';
  const base = { created: 1_767_225_600, id, model, object: 'chat.completion.chunk', system_fingerprint: 'fp_azure' };
  const filtered = completionFilterResults({ category: 'violence', severity: 'medium' });
  if (!streamed)
    return JSON.stringify({
      ...base,
      object: 'chat.completion',
      choices: [
        {
          content_filter_results: filtered,
          finish_reason: 'content_filter',
          index: 0,
          logprobs: null,
          message: { role: 'assistant' },
        },
      ],
      prompt_filter_results: promptFilterResults(),
      usage: chatUsage(usage),
    });
  const choice = (delta: object, results: object, finish: string | null = null) => ({
    ...base,
    choices: [{ content_filter_results: results, delta, finish_reason: finish, index: 0, logprobs: null }],
    usage: null,
  });
  const chunks = [
    promptFilterChunk(),
    JSON.stringify(choice({ content: '', refusal: null, role: 'assistant' }, {})),
    ...delivered.map((content) => JSON.stringify(choice({ content }, completionFilterResults()))),
    JSON.stringify(choice({}, filtered, 'content_filter')),
    JSON.stringify({ ...base, choices: [], usage: chatUsage(usage) }),
    '[DONE]',
  ];
  return chunks.map((data) => `data: ${data}\n\n`).join('');
}

/** Chat completions on Azure: OpenAI's chunks and replies with the content filter's annotations, Azure's errors. */
function azureChat(openai: FakeFormat): FakeFormat {
  return {
    stream(req, reply, pieces) {
      const s = openai.stream(req, reply, pieces);
      return {
        head: [{ data: promptFilterChunk() }, ...s.head.map(annotated)],
        body: s.body.map(annotated),
        tail: s.tail.map(annotated),
      };
    },
    message(req, reply) {
      const message = openai.message(req, reply) as any;
      return {
        ...message,
        choices: message.choices.map((choice: any) => ({ ...choice, content_filter_results: completionFilterResults() })),
        prompt_filter_results: promptFilterResults(),
      };
    },
    error: azureError,
    errorHeaders,
    requestIdHeader: 'apim-request-id',
  };
}

/** The Responses API on Azure: OpenAI's events and objects, Azure's errors. */
const azureResponses = (responses: FakeFormat): FakeFormat => ({
  ...responses,
  error: azureError,
  errorHeaders,
  requestIdHeader: 'apim-request-id',
});

/** A dated API version (`2024-10-21`, `2025-04-01-preview`). */
const DATED = /^\d{4}-\d{2}-\d{2}(-preview)?$/;

/**
 * The route of a request to an Azure path (`/openai/…`), or null for any other path. The dated routes
 * (`/openai/deployments/{d}/…`, `/openai/responses`) require `api-version`; the v1 route takes none,
 * or `v1`/`preview`. Every call needs an `api-key` or an `Authorization: Bearer` token.
 */
export function azureRoute(
  req: IncomingMessage,
  body: any,
  formats: { openai: FakeFormat; responses: FakeFormat },
): AzureRoute | null {
  const url = new URL(req.url ?? '/', 'http://fake');
  if (!url.pathname.startsWith('/openai/')) return null;
  const notFound = { refusal: { status: 404, body: { error: { code: '404', message: 'Resource not found' } } } };
  const deployment = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(url.pathname);
  const v1 = /^\/openai\/v1\/(chat\/completions|responses|embeddings)$/.exec(url.pathname);
  const datedResponses = url.pathname === '/openai/responses';
  if (req.method !== 'POST' || (!deployment && !v1 && !datedResponses)) return notFound;
  const bearer = /^Bearer \S+$/.test(req.headers.authorization ?? '');
  if (!req.headers['api-key'] && !bearer) return { refusal: { status: 401, body: azureError(401) } };
  const version = url.searchParams.get('api-version');
  if (!v1 && version === null) return notFound;
  if (v1 ? version !== null && !['v1', 'preview', 'latest'].includes(version) : !DATED.test(version!))
    return { refusal: { status: 400, body: { error: { code: 'BadRequest', message: 'API version not supported' } } } };
  const operation = deployment ? deployment[2] : v1 ? v1[1] : 'responses';
  const model = deployment ? decodeURIComponent(deployment[1]) : String(body?.model ?? '');
  if (operation === 'embeddings') return { api: 'embeddings', model, format: null };
  if (operation === 'responses') return { api: 'responses', model, format: azureResponses(formats.responses) };
  return { api: 'openai', model, format: azureChat(formats.openai) };
}
