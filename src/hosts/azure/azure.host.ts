import { openAiErrorMessage } from '../host-kind';
import type { HostKind, HostSetting, HostSettings, UpstreamRequest } from '../host-kind';
import { openAiEmbeddingsRequest } from '../openai/openai.embeddings';
import { CHAT_COMPLETIONS_LIMITS, openAiHost } from '../openai/openai.host';
import { openAiResponsesHost, RESPONSES_LIMITS } from '../openai-responses/openai-responses.host';
import { entraAuthorizer, entraCredential } from './azure.entra';

/**
 * Azure OpenAI: OpenAI's formats (chat completions, Responses, embeddings) on an Azure resource's
 * deployments, translated by the openai and openai-responses kinds; only where the call goes and
 * how it is authorized are Azure's own. A host entry's fields:
 * - `endpoint` (`https://{resource}.openai.azure.com`), or `baseUrl` in its place;
 * - `route`: `deployments` (`/openai/deployments/{deployment}/…?api-version=…`, the catalogue's host
 *   model naming the deployment) or `v1` (`/openai/v1/…`, the deployment named by the body's model);
 * - `api`: `chat-completions` or `responses` (the Responses API: `/openai/v1/responses`, or
 *   `/openai/responses?api-version=…` on the deployments route);
 * - `apiVersion`: the deployments route's (a GA or a preview version); the v1 route needs none and
 *   sends one only when given (`preview`);
 * - `auth`: `api-key` (the `api-key` header, from `apiKeyEnv`) or `entra` (an Entra ID token, see
 *   azure.entra.ts).
 */

/** The latest GA version of the deployments route's API: the version sent when the entry names none. */
export const AZURE_GA_API_VERSION = '2024-10-21';
/** The Responses API on the deployments route exists only in previews: the version sent for it when the entry names none. */
export const AZURE_RESPONSES_API_VERSION = '2025-04-01-preview';

const SETTINGS: readonly HostSetting[] = [
  { name: 'endpoint', default: '' },
  { name: 'route', default: 'deployments', values: ['deployments', 'v1'] },
  { name: 'api', default: 'chat-completions', values: ['chat-completions', 'responses'] },
  { name: 'apiVersion', default: '' },
  { name: 'auth', default: 'api-key', values: ['api-key', 'entra'] },
];

/** The fields of an entry that gives none of them. */
const DEFAULTS: HostSettings = Object.fromEntries(SETTINGS.map((s) => [s.name, s.default ?? '']));

type Operation = 'chat/completions' | 'responses' | 'embeddings';

/** Where an operation is on a host, with the API version its route takes. */
export function azurePath(settings: HostSettings, operation: Operation, deployment: string): string {
  const version = (fallback: string) => `?api-version=${encodeURIComponent(settings.apiVersion || fallback)}`;
  if (settings.route === 'v1') return `/openai/v1/${operation}${settings.apiVersion ? version('') : ''}`;
  if (operation === 'responses') return `/openai/responses${version(AZURE_RESPONSES_API_VERSION)}`;
  return `/openai/deployments/${encodeURIComponent(deployment)}/${operation}${version(AZURE_GA_API_VERSION)}`;
}

/**
 * An OpenAI kind's call, sent to Azure: at its path there, the key in Azure's `api-key` header (with
 * Entra ID, none: the authorizer adds the token). The body keeps its model, the deployment's name,
 * as Azure's own clients send it (the v1 route reads it; the deployments route ignores it).
 */
function onAzure(upstream: UpstreamRequest, path: string, apiKey: string | null, settings: HostSettings): UpstreamRequest {
  const { authorization: _none, ...headers } = upstream.headers;
  if (settings.auth === 'api-key' && apiKey) headers['api-key'] = apiKey;
  return { ...upstream, path, headers };
}

/** The OpenAI kind whose format a host speaks. */
const formatOf = (settings: HostSettings): HostKind => (settings.api === 'responses' ? openAiResponsesHost : openAiHost);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The categories Azure's content filter refused a prompt for (`violence (medium)`, `jailbreak`), from
 * a `content_filter` error's `innererror`: Azure sends `content_filter_result`, its reference names
 * it `content_filter_results`; either is read.
 */
function filteredCategories(body: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  const error = isObject(parsed) && isObject(parsed.error) ? parsed.error : {};
  const inner = isObject(error.innererror) ? error.innererror : {};
  const results = isObject(inner.content_filter_result)
    ? inner.content_filter_result
    : isObject(inner.content_filter_results)
      ? inner.content_filter_results
      : {};
  return Object.entries(results).flatMap(([category, result]) =>
    isObject(result) && result.filtered === true
      ? [typeof result.severity === 'string' ? `${category} (${result.severity})` : category]
      : [],
  );
}

/** Azure's error body as OpenAI's is read, naming what its content filter refused a prompt for. */
export function azureErrorMessage(status: number, body: string): string {
  const message = openAiErrorMessage(status, body);
  const filtered = filteredCategories(body);
  return filtered.length === 0 ? message : `${message} (content filter: ${filtered.join(', ')})`;
}

export const azureHost: HostKind<'azure'> = {
  name: 'azure',

  settings: SETTINGS,

  defaultBaseUrl: (settings) => settings.endpoint || undefined,

  wholeFormat: (hostModel, settings = DEFAULTS) => formatOf(settings).wholeFormat!(hostModel),
  // The Responses API's least cap holds on Azure too.
  minOutputTokens: (settings) => formatOf(settings).minOutputTokens?.(settings) ?? 1,
  // Azure OpenAI's chat completions and Responses API keep OpenAI's limits.
  limits: (_hostModel, settings) => (settings.api === 'responses' ? RESPONSES_LIMITS : CHAT_COMPLETIONS_LIMITS),

  buildRequest(request, hostModel, apiKey, settings = DEFAULTS) {
    const operation = settings.api === 'responses' ? 'responses' : 'chat/completions';
    const upstream = formatOf(settings).buildRequest(request, hostModel, null);
    return onAzure(upstream, azurePath(settings, operation, hostModel), apiKey, settings);
  },

  // Made once per host: the credential (and its token cache) lives as long as the catalogue's host.
  authorizer: (host) => (host.settings.auth === 'entra' ? entraAuthorizer(() => entraCredential()) : null),

  decoder: (passThrough = false, settings = DEFAULTS) => formatOf(settings).decoder(passThrough),

  decodeReply: (body, passThrough = false, settings = DEFAULTS) => formatOf(settings).decodeReply(body, passThrough),

  errorMessage: azureErrorMessage,

  embeddingsRequest: (body, hostModel, apiKey, settings = DEFAULTS) =>
    onAzure(openAiEmbeddingsRequest(body, hostModel, null), azurePath(settings, 'embeddings', hostModel), apiKey, settings),
};
