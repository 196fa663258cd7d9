import { CanonicalRequest } from '../../canonical/canonical';
import type { HostedToolsRun } from '../../canonical/hosted-tools';
import { anthropicHost, messagesBody } from '../anthropic/anthropic.host';
import { geminiHost, geminiRequest, searchesBesideFunctions } from '../gemini/gemini.host';
import type { HostKind, HostSettings, UpstreamRequest } from '../host-kind';
import { googleCredential } from './google-credential';

/**
 * Google Cloud's Vertex AI: Claude (Anthropic's publisher) and Gemini (Google's) in one project and
 * location, each model in its publisher's wire. The publisher is the host's `publisher` when it
 * names one, else the host model's: `claude-…` is Anthropic's, anything else Google's. Calls carry a
 * Google access token (see google-credential.ts), never a key.
 */

/** The Messages API version Vertex AI takes, in the body (not a header). */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/**
 * The hosted tools this kind runs, on either publisher: web search. Claude runs the messages
 * format's web search server tool on Vertex AI as on Anthropic's API (Vertex AI's "Web search with
 * Anthropic Claude models", cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/web-search,
 * read 2026-11-26: the `web_search_20250305` tool under the `web-search-2025-03-05` beta), passed
 * whole from a messages client and counted in `usage.server_tool_use`; Gemini runs it as Google
 * Search grounding (the gemini kind's), from any format. A kind declares one set for its models:
 * web fetch, which Vertex AI does not list for Claude, is run by neither.
 */
const HOSTED_TOOLS: HostedToolsRun = {
  whole: new Set(['webSearch']),
  translated: new Set(['webSearch']),
  // Claude searches beside functions; Gemini as on the gemini kind. By the model's name, as the publisher is told by default.
  besideFunctions: (hostModel) => hostModel.startsWith('claude-') || searchesBesideFunctions(hostModel),
};

/** The beta under which Vertex AI runs Claude's web search. */
const WEB_SEARCH_BETA = 'web-search-2025-03-05';

type Publisher = 'anthropic' | 'google';

/** `auto`: the publisher is the model's, by its name. */
const PUBLISHERS = ['auto', 'anthropic', 'google'] as const;

export function publisherOf(hostModel: string, settings?: HostSettings): Publisher {
  const named = settings?.publisher;
  if (named === 'anthropic' || named === 'google') return named;
  return hostModel.startsWith('claude-') ? 'anthropic' : 'google';
}

/** A model's path segment: its name as Google writes it (`claude-sonnet-4-5@20250929`, the `@` kept). */
const segment = (hostModel: string) => encodeURIComponent(hostModel).replace(/%40/g, '@');

/** Vertex AI's base URL for a project and location: the global endpoint, or the location's own. */
function defaultBaseUrl(settings: HostSettings): string {
  const project = encodeURIComponent(settings.project);
  const location = encodeURIComponent(settings.location);
  const origin = location === 'global' ? 'https://aiplatform.googleapis.com' : `https://${location}-aiplatform.googleapis.com`;
  return `${origin}/v1/projects/${project}/locations/${location}`;
}

/** The headers of a call in the Messages wire: the client's betas (Vertex AI reads the header); the version is in the body. */
function anthropicHeaders(betas: string[] = []): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (betas.length > 0) headers['anthropic-beta'] = betas.join(',');
  return headers;
}

/** Whether a Messages body offers the web search server tool (its own, or the one a translation added). */
const searches = (body: Record<string, unknown>) =>
  Array.isArray(body.tools) &&
  body.tools.some(
    (t: unknown) => typeof t === 'object' && t !== null && String((t as { type?: unknown }).type).startsWith('web_search'),
  );

/**
 * Claude on Vertex AI: the Messages body without its model (named in the path), the version in it;
 * a body offering web search under the beta Vertex AI runs it with.
 */
function anthropicRequest(request: CanonicalRequest, hostModel: string): UpstreamRequest {
  const { body, passThrough } = messagesBody(request);
  const method = request.stream ? 'streamRawPredict' : 'rawPredict';
  const betas = request.betas ?? [];
  const upstream = {
    path: `/publishers/anthropic/models/${segment(hostModel)}:${method}`,
    headers: anthropicHeaders(searches(body) && !betas.includes(WEB_SEARCH_BETA) ? [...betas, WEB_SEARCH_BETA] : betas),
    body: { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...body },
  };
  return passThrough ? { ...upstream, passThrough } : upstream;
}

/**
 * Gemini on Vertex AI: the gemini kind's request (`…/models/{model}:generateContent`, or
 * `:streamGenerateContent?alt=sse`), under Google's publisher, without a key, and without what
 * Vertex AI does not take (see geminiRequest).
 */
function googleRequest(request: CanonicalRequest, hostModel: string): UpstreamRequest {
  const upstream = geminiRequest(request, hostModel, null, true);
  return { ...upstream, path: `/publishers/google${upstream.path}` };
}

function buildRequest(
  request: CanonicalRequest,
  hostModel: string,
  _apiKey: string | null,
  settings?: HostSettings,
): UpstreamRequest {
  return publisherOf(hostModel, settings) === 'anthropic'
    ? anthropicRequest(request, hostModel)
    : googleRequest(request, hostModel);
}

/** The kind whose wire a model's publisher speaks, which reads its replies. */
const wireOf = (hostModel: string, settings?: HostSettings): HostKind =>
  publisherOf(hostModel, settings) === 'anthropic' ? anthropicHost : geminiHost;

/**
 * Claude counts on Vertex AI's count-tokens model, the host's model named in the body (as the
 * Messages API has it); Gemini's count is of another wire, so its hosts do not count.
 */
function countTokensRequest(
  body: Record<string, unknown>,
  hostModel: string,
  _apiKey: string | null,
  betas: string[],
  settings?: HostSettings,
) {
  if (publisherOf(hostModel, settings) !== 'anthropic') return null;
  return {
    path: '/publishers/anthropic/models/count-tokens:rawPredict',
    headers: anthropicHeaders(betas),
    body: { ...body, model: hostModel, anthropic_version: VERTEX_ANTHROPIC_VERSION },
  };
}

export const vertexHost: HostKind<'vertex'> = {
  name: 'vertex',
  settings: [
    { name: 'project' },
    { name: 'location' },
    { name: 'credentialsFile', default: '' },
    { name: 'publisher', default: 'auto', values: PUBLISHERS },
  ],
  defaultBaseUrl,
  authorizer: (host) => googleCredential(host.settings.credentialsFile),
  buildRequest,
  omittedReasoning: (request, hostModel, settings) =>
    wireOf(hostModel, settings).omittedReasoning?.(request, hostModel, settings) ?? null,
  limits: (hostModel, settings, baseUrl) => wireOf(hostModel, settings).limits?.(hostModel, settings, baseUrl) ?? {},
  countTokensRequest,
  decoder: (passThrough = false, settings, hostModel = '') =>
    wireOf(hostModel, settings).decoder(passThrough, settings, hostModel),
  decodeReply: (body, passThrough = false, settings, hostModel = '') =>
    wireOf(hostModel, settings).decodeReply(body, passThrough, settings, hostModel),
  // Google's error body (`{"error": {"code", "message", "status"}}`, the front end's for either
  // publisher) as the gemini kind reads it, which reads Anthropic's (`{"error": {"message"}}`) too.
  errorMessage: (status, body) => geminiHost.errorMessage(status, body),
  hostedTools: HOSTED_TOOLS,
  // Claude in the Messages wire, passed whole from a messages client (messagesBody); Gemini translated.
  wholeFormat: (hostModel, settings) => (publisherOf(hostModel, settings) === 'anthropic' ? 'messages' : null),
};
