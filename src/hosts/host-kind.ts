import type { CanonicalEvent, CanonicalRequest, OutputFormatType, WireFormat } from '../canonical/canonical';
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

/** One server-sent event as the SSE parser hands it over (or a binary stream's message, as its kind's framing gives it). */
export interface SseMessage {
  event?: string;
  data: string;
}

/**
 * How a stream's bytes are cut into messages: server-sent events unless the kind says otherwise
 * (Bedrock's binary event stream). Throws on bytes it cannot read.
 */
export interface StreamFraming {
  feed(chunk: Uint8Array): SseMessage[];
}

/** A field of a host entry a kind reads besides `baseUrl` and `apiKeyEnv` (a region, a project, an API version). */
export interface HostSetting {
  name: string;
  /** Its value when the entry gives none; without one, the entry must give it. */
  default?: string;
  /** The values it may take, when it is a choice (a route, an API); the catalogue refuses any other. */
  values?: readonly string[];
}

/** What a kind knows of the catalogue host it calls: its own fields (see HostKind.settings), read once. */
export type HostSettings = Readonly<Record<string, string>>;

/** One call to sign or authorize, as it will go out: its method, whole URL, headers and body. */
export interface OutgoingCall {
  method: 'POST';
  url: URL;
  headers: Record<string, string>;
  body: string;
}

/**
 * The credential of a host whose calls need more than a static key: a token fetched and refreshed
 * (Google, Entra ID) or a signature over the call (SigV4). Gives the headers to add to one call;
 * fails with a message holding no secret when no credential can be had.
 */
export interface HostAuthorizer {
  headers(call: OutgoingCall): Promise<Record<string, string>>;
}

/** The catalogue host a kind builds its authorizer for. */
export interface AuthorizedHost {
  readonly id: string;
  readonly baseUrl: string;
  readonly apiKey: string | null;
  readonly settings: HostSettings;
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

/** The limits of an upstream's wire a request can break (see HostKind.limits); absent: none. */
export interface WireLimits {
  /** The most stop sequences it takes. */
  stopSequences?: number;
  /** The function (tool) names it takes, and that rule in words, for a refusal. */
  toolNames?: { pattern: RegExp; rule: string };
  /**
   * The structured outputs it takes (CanonicalRequest.outputFormat), and how it names them: absent,
   * every one. Anthropic's `output_config.format` and Converse's `outputConfig.textFormat` take a
   * schema only (no JSON mode).
   */
  outputFormats?: {
    takes: readonly OutputFormatType[];
    field: string;
    /** JSON mode only when the request says "JSON" where the host's API looks for it (OpenAI's rule: its 400 otherwise). */
    jsonModeNeedsTheWord?: JsonWordRule;
    /** Structured output only without function tools (Gemini before 3: its 400 otherwise). */
    notWithFunctionTools?: true;
  };
  /**
   * The prefix of the beta names (CanonicalRequest.betas) with which this upstream takes a prompt past
   * its usual window and bills every token of it at its long-context price (Anthropic's `context-1m-…`,
   * versioned by date): such a request goes only to a host whose catalogue entry gives that price
   * (`longContext`), else it would be billed below what the host charges; with no such host, the beta
   * is left out of the call (see admission's withLongContextBeta).
   */
  longContextBeta?: string;
}

/**
 * Where an API looks for the word "JSON" before it takes JSON mode: `where`, in words for a refusal
 * ("the messages"); `says`, whether the request as this host is sent it says it there (`whole`: the
 * client's body is passed whole, else the kind's translation).
 */
export interface JsonWordRule {
  where: string;
  says(request: CanonicalRequest, whole: boolean): boolean;
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
  /**
   * `settings`: the host entry's own fields, for kinds that declare some. The path may carry a query
   * (`?alt=sse`).
   */
  buildRequest(request: CanonicalRequest, hostModel: string, apiKey: string | null, settings?: HostSettings): UpstreamRequest;
  /**
   * Kinds that translate reasoning into a form the host refuses beside some requests (Anthropic's
   * thinking): why `buildRequest` leaves this request's reasoning out, named in the reply's
   * `x-gateway-omitted-reasoning` header; null when it goes, or none was asked for. Absent: always carried.
   */
  omittedReasoning?(request: CanonicalRequest, hostModel: string, settings?: HostSettings): string | null;
  /** The host entry's own fields this kind reads (see HostSetting); none when absent. */
  readonly settings?: readonly HostSetting[];
  /**
   * The base URL of an entry that gives none, from its settings (a region's endpoint); without this
   * (or when it gives none), the entry must give `baseUrl`.
   */
  defaultBaseUrl?(settings: HostSettings): string | undefined;
  /**
   * Hosts whose calls need a token or a signature: the authorizer of one host, made once per
   * catalogue host and kept. Absent or null: the kind's headers (with the static key) are enough.
   */
  authorizer?(host: AuthorizedHost): HostAuthorizer | null;
  /**
   * The least output cap this kind's upstream takes (OpenAI's Responses API: 16), on a host with these
   * settings: a request capped lower is sent this cap instead, and its hold and usage check are of it
   * (see admission.ts). Absent: any cap from 1.
   */
  minOutputTokens?(settings: HostSettings): number;
  /**
   * What this kind's upstream refuses outright on `hostModel`, as its API reference says (more stop
   * sequences than it takes, a function name outside its rule): admission sends a request only to the
   * hosts whose limits it keeps, and refuses it (400) when none does. `baseUrl`: the host's, for a kind
   * whose servers differ (OpenAI's own API, or a server compatible with its format). Absent: none known.
   */
  limits?(hostModel: string, settings: HostSettings, baseUrl: string): WireLimits;
  /** How this kind's streams are framed; server-sent events when absent. */
  framing?(): StreamFraming;
  /**
   * Kinds whose upstream counts the input tokens of a messages-format request (the messages
   * surface's `count_tokens`): the call for the client's body as it is, on the host's model, with
   * the client's betas. The upstream answers `{"input_tokens": N}`. Null: this host's model cannot
   * count (a kind serving several wires counts on some of its models only).
   */
  countTokensRequest?(
    body: Record<string, unknown>,
    hostModel: string,
    apiKey: string | null,
    betas: string[],
    settings?: HostSettings,
  ): UpstreamRequest | null;
  /**
   * A decoder for one stream; `passThrough`: each message also yields its `pass_through` event, ahead
   * of what it decodes to. `settings`: the host's own fields (a kind speaking more than one API);
   * `hostModel`: the model called (a kind whose wire depends on it: Vertex AI serves Claude in the
   * Messages wire, Gemini in Google's).
   */
  decoder(passThrough?: boolean, settings?: HostSettings, hostModel?: string): StreamDecoder;
  /**
   * The canonical events of a whole (non-streamed) reply body, ending with its `pass_through` event
   * when asked; throws HostError when it cannot be read. `settings` and `hostModel` as for `decoder`.
   */
  decodeReply(body: string, passThrough?: boolean, settings?: HostSettings, hostModel?: string): CanonicalEvent[];
  /** A readable message from an error response body (JSON or text), for logs and clients. */
  errorMessage(status: number, body: string): string;
  /**
   * Kinds whose upstream serves embeddings (POST /embeddings): the call for the client's body
   * as it is, on the host's model. Only these may serve a catalogue's embedding models.
   */
  embeddingsRequest?(
    body: Record<string, unknown>,
    hostModel: string,
    apiKey: string | null,
    settings?: HostSettings,
  ): UpstreamRequest;
  /**
   * Kinds whose upstream runs hosted tools (web search…): which classes, passed whole in its own
   * format and translated from the others (see hosted-tools.ts). The decoder then reports each
   * use in `usage.hostedToolUses`, and a body passed whole is bounded to the request's
   * `carriedTools.maxUses`. Absent: the kind runs none, and they are left out of its calls.
   */
  readonly hostedTools?: HostedToolsRun;
  /**
   * The format whose clients' bodies this kind sends `hostModel` whole (its own wire: see
   * CanonicalRequest.original); null or absent, it translates every format. What a body carries that
   * has no translation (the messages format's client-run tools) reaches only these.
   */
  wholeFormat?(hostModel: string, settings?: HostSettings): WireFormat | null;
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
