import { CanonicalRequest, HostError } from '../../canonical/canonical';
import { anthropicHost, messagesBody } from '../anthropic/anthropic.host';
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

/** Claude on Vertex AI: the Messages body without its model (named in the path), the version in it. */
function anthropicRequest(request: CanonicalRequest, hostModel: string): UpstreamRequest {
  const { body, passThrough } = messagesBody(request);
  const method = request.stream ? 'streamRawPredict' : 'rawPredict';
  const upstream = {
    path: `/publishers/anthropic/models/${segment(hostModel)}:${method}`,
    headers: anthropicHeaders(request.betas),
    body: { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...body },
  };
  return passThrough ? { ...upstream, passThrough } : upstream;
}

function buildRequest(
  request: CanonicalRequest,
  hostModel: string,
  _apiKey: string | null,
  settings?: HostSettings,
): UpstreamRequest {
  if (publisherOf(hostModel, settings) === 'anthropic') return anthropicRequest(request, hostModel);
  throw new HostError('status', `vertex: "${hostModel}" is not a Claude model, and Gemini on Vertex AI is not served yet`, 404);
}

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

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Google's error body (`{"error": {"code", "message", "status"}}`, sometimes inside an array) or
 * the publisher's (Anthropic's `{"type": "error", "error": {"message"}}`), or its text.
 */
function errorMessage(status: number, body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    const error = (Array.isArray(parsed) ? parsed[0] : parsed) as unknown;
    if (isObject(error) && isObject(error.error) && typeof error.error.message === 'string') return error.error.message;
  } catch {
    // Not JSON (a proxy's page): its text.
  }
  return body.trim().slice(0, 300) || `upstream answered ${status}`;
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
  countTokensRequest,
  decoder: (passThrough = false, settings, hostModel = '') => {
    if (publisherOf(hostModel, settings) === 'anthropic') return anthropicHost.decoder(passThrough);
    throw new HostError('malformed', `vertex: no reader for "${hostModel}"`);
  },
  decodeReply: (body, passThrough = false, settings, hostModel = '') => {
    if (publisherOf(hostModel, settings) === 'anthropic') return anthropicHost.decodeReply(body, passThrough);
    throw new HostError('malformed', `vertex: no reader for "${hostModel}"`);
  },
  errorMessage,
};
