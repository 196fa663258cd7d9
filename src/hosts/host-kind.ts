import type { CanonicalEvent, CanonicalRequest } from '../canonical/canonical';
import type { HostedToolsRun } from '../canonical/hosted-tools';

/** An upstream HTTP request, before transport: path relative to the host's baseUrl. */
export interface UpstreamRequest {
  path: string;
  headers: Record<string, string>;
  body: unknown;
  /**
   * The body is the client's own, in this host's format (see CanonicalRequest.original): the
   * reply is decoded with its upstream messages kept, for the surface to send on whole.
   */
  passThrough?: boolean;
}

/** One server-sent event as the SSE parser hands it over. */
export interface SseMessage {
  event?: string;
  data: string;
}

/**
 * Parses one upstream stream: fed SSE messages in order, returns the canonical events each
 * yields, and `done` once the upstream said its stream is complete. Throws HostError on a
 * message it cannot understand or an error the upstream reports.
 */
export interface StreamDecoder {
  push(message: SseMessage): CanonicalEvent[];
  readonly done: boolean;
}

/**
 * A kind of host: pure translation between the canonical request/stream and one upstream wire
 * format. The transport (HTTP, keep-alive, aborts, timeouts) is shared and knows no format.
 * A host is called streamed (asking for usage) when the client streams, otherwise for the
 * whole reply; either way the pipeline sees canonical events.
 */
export interface HostKind<Name extends string = string> {
  /** The name a catalogue host's `kind` gives (see hosts.ts, the registry of kinds). */
  readonly name: Name;
  buildRequest(request: CanonicalRequest, hostModel: string, apiKey: string | null): UpstreamRequest;
  /**
   * Kinds whose upstream counts the input tokens of a messages-format request (the messages
   * surface's `count_tokens`): the call for the client's body as it is, on the host's model, with
   * the client's betas. The upstream answers `{"input_tokens": N}`.
   */
  countTokensRequest?(body: Record<string, unknown>, hostModel: string, apiKey: string | null, betas: string[]): UpstreamRequest;
  /** A decoder for one stream; `passThrough`: each message also yields its `pass_through` event, ahead of what it decodes to. */
  decoder(passThrough?: boolean): StreamDecoder;
  /**
   * The canonical events of a whole (non-streamed) reply body, ending with its `pass_through` event
   * when asked; throws HostError when it cannot be read.
   */
  decodeReply(body: string, passThrough?: boolean): CanonicalEvent[];
  /** A readable message from an error response body (JSON or text), for logs and clients. */
  errorMessage(status: number, body: string): string;
  /**
   * Kinds whose upstream serves embeddings (POST /embeddings): the call for the client's body
   * as it is, on the host's model. Only these may serve a catalogue's embedding models.
   */
  embeddingsRequest?(body: Record<string, unknown>, hostModel: string, apiKey: string | null): UpstreamRequest;
  /**
   * Kinds whose upstream runs hosted tools (web search…): which classes, passed whole in its own
   * format and translated from the others (see hosted-tools.ts). The decoder then reports each
   * use in `usage.hostedToolUses`, and a body passed whole is bounded to the request's
   * `carriedTools.maxUses`. Absent: the kind runs none, and they are left out of its calls.
   */
  readonly hostedTools?: HostedToolsRun;
}

/**
 * OpenAI's error body (`{"error": {"message": …}}`, also sent by the servers compatible with it), or
 * its text when it is not JSON (a proxy's page): what the kinds speaking OpenAI's formats say failed.
 */
export function openAiErrorMessage(status: number, body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: string } | string; message?: string };
    const message = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message);
    if (message) return message;
  } catch {
    // not JSON: fall through to the text
  }
  const text = body.trim().slice(0, 300);
  return text || `upstream answered ${status}`;
}
