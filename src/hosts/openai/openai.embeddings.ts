import type { UpstreamRequest } from '../host-kind';

/**
 * Embeddings on an `openai` host: POST {baseUrl}/embeddings with the client's body whole
 * (input, dimensions, encoding_format, user and anything else it sent), only the model
 * renamed to the host's. The reply comes back as JSON, read by the embeddings use case.
 */
export function openAiEmbeddingsRequest(
  body: Record<string, unknown>,
  hostModel: string,
  apiKey: string | null,
): UpstreamRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  return { path: '/embeddings', headers, body: { ...body, model: hostModel } };
}
