// Vertex AI's wire for the fake upstream (fake-upstream.ts): a project's and location's publisher
// models, `/v1/projects/{p}/locations/{l}/publishers/{publisher}/models/{model}:{method}`, as Google
// documents them today. Every call needs an access token the fake's Google token endpoint issued
// (see google-oauth.ts) with the cloud-platform scope. The Anthropic publisher speaks the Messages
// wire (its model in the path, `anthropic_version` in the body); Google's speaks Gemini's (as
// fakes/gemini.ts plays it, with Vertex AI's own fields); errors Google's front end answers come in
// Google's format.
import type { IncomingHttpHeaders } from 'node:http';
import type { FakeFormat } from '../fake-upstream';
import type { FakeGoogleOAuth } from './google-oauth';

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

/** The Messages API version Vertex AI takes for Claude. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** A call to a publisher model: which, and whether its reply is streamed; `countTokens` for Claude's count-tokens model. */
export interface VertexRoute {
  project: string;
  location: string;
  publisher: 'anthropic' | 'google';
  model: string;
  stream: boolean;
  countTokens: boolean;
}

const METHODS: Record<VertexRoute['publisher'], Record<string, boolean>> = {
  anthropic: { rawPredict: false, streamRawPredict: true },
  google: { generateContent: false, streamGenerateContent: true },
};

/** The route of a Vertex AI path (under the fake's /v1), or null for any other path or a method the publisher lacks. */
export function vertexRoute(path: string): VertexRoute | null {
  const match = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(anthropic|google)\/models\/([^/:]+):(\w+)$/.exec(
    path,
  );
  if (!match) return null;
  const [, project, location, publisher, model, method] = match;
  const stream = METHODS[publisher as VertexRoute['publisher']][method];
  if (stream === undefined) return null;
  const countTokens = publisher === 'anthropic' && model === 'count-tokens';
  if (countTokens && method !== 'rawPredict') return null;
  return {
    project: decodeURIComponent(project),
    location: decodeURIComponent(location),
    publisher: publisher as VertexRoute['publisher'],
    model: decodeURIComponent(model),
    stream,
    countTokens,
  };
}

/** gRPC's status names, as Google's JSON errors carry them. */
const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'NOT_IMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const DEFAULT_MESSAGES: Record<number, string> = {
  401: 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
  429: 'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model.',
  500: 'Internal error encountered.',
  503: 'The service is currently unavailable.',
};

/** Google's error body: `{"error": {"code", "message", "status"}}`, its sentence ending with the fake's mark. */
export function googleError(status: number, message?: string) {
  const said = DEFAULT_MESSAGES[status] ? `${DEFAULT_MESSAGES[status]} ` : '';
  return {
    error: {
      code: status,
      message: message ?? `${said}Fake upstream error (HTTP ${status}).`,
      status: STATUS_NAMES[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION'),
    },
  };
}

/** Google's refusal of a call without a valid token (401), or with one lacking the scope (403); null when it may go on. */
export function vertexAuthRefusal(
  headers: IncomingHttpHeaders,
  oauth: FakeGoogleOAuth,
): { status: number; body: unknown } | null {
  switch (oauth.check(headers.authorization, CLOUD_PLATFORM_SCOPE)) {
    case 'valid':
      return null;
    case 'insufficient':
      return { status: 403, body: googleError(403, 'Request had insufficient authentication scopes.') };
    case 'invalid':
      return { status: 401, body: googleError(401) };
  }
}

/**
 * What Claude on Vertex AI refuses in a body (400, in the Messages API's words), or null: the
 * version must be Vertex's and the model must not be in it (it is in the path). A count-tokens body
 * names its model and needs no `max_tokens`. The fake also holds the method and `stream` to agree,
 * as Anthropic's own Vertex client sends them.
 */
export function vertexAnthropicProblem(body: any, route: VertexRoute): string | null {
  if (typeof body !== 'object' || body === null) return 'The request body is not valid JSON.';
  if (body.anthropic_version === undefined) return 'anthropic_version: Field required';
  if (body.anthropic_version !== VERTEX_ANTHROPIC_VERSION)
    return `anthropic_version: Input should be '${VERTEX_ANTHROPIC_VERSION}'`;
  if (!Array.isArray(body.messages)) return 'messages: Field required';
  if (route.countTokens) return typeof body.model === 'string' ? null : 'model: Field required';
  if ('model' in body) return 'model: Extra inputs are not permitted';
  if (typeof body.max_tokens !== 'number') return 'max_tokens: Field required';
  if ((body.stream === true) !== route.stream)
    return route.stream ? 'streamRawPredict requires "stream": true' : 'rawPredict requires a request that is not streamed';
  return null;
}

/**
 * What Vertex AI refuses in a Gemini body (400), or null: contents, each with its role (which
 * Vertex AI requires, unlike the Gemini API) and its parts; no model (it is in the path).
 */
export function vertexGoogleProblem(body: any): string | null {
  if (typeof body !== 'object' || body === null) return 'Invalid JSON payload received.';
  if ('model' in body) return 'Invalid JSON payload received. Unknown name "model": Cannot find field.';
  if (!Array.isArray(body.contents) || body.contents.length === 0)
    return 'Unable to submit request because it has an empty contents field.';
  for (const content of body.contents) {
    if (content?.role !== 'user' && content?.role !== 'model') return 'Please use a valid role: user, model.';
    if (!Array.isArray(content.parts) || content.parts.length === 0)
      return 'Unable to submit request because it must include at least one parts field.';
  }
  return null;
}

/** A Gemini response as Vertex AI sends it: with its creation time, and its usage's traffic type. */
function onVertex(response: any) {
  const usage = response.usageMetadata;
  return {
    ...response,
    ...(typeof usage === 'object' && usage !== null ? { usageMetadata: { ...usage, trafficType: 'ON_DEMAND' } } : {}),
    createTime: new Date().toISOString(),
  };
}

/**
 * A publisher's wire as Vertex AI serves it: its errors in Google's format (Vertex AI's front end
 * answers them); Gemini's responses with Vertex AI's own fields.
 */
export function vertexFormat(format: FakeFormat, publisher: VertexRoute['publisher']): FakeFormat {
  if (publisher === 'anthropic') return { ...format, error: googleError };
  const onFrame = (frame: { data: string }) => ({ ...frame, data: JSON.stringify(onVertex(JSON.parse(frame.data))) });
  return {
    ...format,
    error: googleError,
    message: (req, reply) => onVertex(format.message(req, reply)),
    stream(req, reply, pieces) {
      const { head, body, tail } = format.stream(req, reply, pieces);
      return { head: head.map(onFrame), body: body.map(onFrame), tail: tail.map(onFrame) };
    },
  };
}
