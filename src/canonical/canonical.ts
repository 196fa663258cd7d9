/**
 * The canonical request and stream: what every surface translates its wire format into, and
 * what every host kind translates to and from its upstream's wire format. Nothing here knows
 * a wire format, a host or a price.
 */

export interface CanonicalToolCall {
  id: string;
  name: string;
  /** The arguments as JSON text, exactly as the model produced them. */
  arguments: string;
}

/**
 * A conversation's messages in order. A `system` message is an instruction given at that point of
 * the conversation (agents add them as it goes); instructions before the first message are the
 * request's `system` instead.
 */
export type CanonicalMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string; images?: CanonicalImage[] }
  | {
      role: 'assistant';
      content: string;
      toolCalls: CanonicalToolCall[];
      /** The reasoning shown before this turn, as the client gave it back. */
      reasoning?: CanonicalReasoning;
    }
  | { role: 'tool'; toolCallId: string; content: string };

/**
 * Reasoning given back with an assistant turn: its text and the host's signature of it, which hosts
 * that take reasoning back (Gemini's thought signatures) return with the turn; and, from a messages
 * client, Anthropic's thinking blocks one by one (see SignedThinking).
 */
export interface CanonicalReasoning {
  text: string;
  signature?: string;
  blocks?: SignedThinking[];
}

/**
 * One of Anthropic's thinking blocks as a messages client gave it back, with its own signature: Claude
 * hosts reached by translation (Bedrock's Converse) take a tool loop's thinking back only block by
 * block, each as it was signed (the joined text and last signature would not verify).
 */
export interface SignedThinking {
  thinking: string;
  signature: string;
}

/**
 * An image the user gave, as a URL: `https:` for one the host fetches, or a `data:` URL
 * (`data:image/png;base64,…`) for one sent inline. Hosts put a message's images before its text.
 */
export interface CanonicalImage {
  url: string;
}

export interface CanonicalTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
}

/** `auto`: the model decides; `required`: it must call some tool; `none`; or one named tool. */
export type CanonicalToolChoice = 'auto' | 'required' | 'none' | { name: string };

export interface CanonicalRequest {
  /** System and developer instructions given before the conversation, in order. */
  system: string[];
  messages: CanonicalMessage[];
  tools: CanonicalTool[];
  toolChoice?: CanonicalToolChoice;
  /**
   * false: at most one tool call a turn (chat-completions and Responses `parallel_tool_calls`, the
   * messages `tool_choice.disable_parallel_tool_use`); absent: the host's default, several allowed.
   */
  parallelToolCalls?: false;
  /** Cap on output tokens; the pipeline fills in the model's default when the client gave none. */
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stop: string[];
  /**
   * Whether the client takes the reply as a stream. Hosts are called the same way: a whole
   * reply comes back in one piece, cheaper for both sides than a stream reassembled here.
   */
  stream: boolean;
  /**
   * Beta features the client asked for by name (the messages format's `anthropic-beta` header):
   * hosts speaking that format pass them on; others have no use for them.
   */
  betas?: string[];
  /**
   * How much the model should reason before answering, when the client said: an effort, or a
   * budget of thinking tokens (the messages format's `thinking`). Hosts translate whichever was
   * given into their own terms; `none` asks for no reasoning.
   */
  reasoning?: { effort?: ReasoningEffort; budgetTokens?: number };
  /**
   * The client's own body and its wire format. A host speaking that format is sent this body
   * whole (every field and block, known here or not) with only the model and a lowered cap
   * changed, and its reply goes back whole; other hosts get the translation of the fields above.
   */
  original?: { format: WireFormat; body: Record<string, unknown> };
  /** The hosted tools the client offered, as its surface classified them (absent: none); admission decides on them (hosted-tools.ts). */
  hostedTools?: ToolsAsked;
  /** Decided at admission: the hosted tools carried to the serving host, by class (absent: none). */
  carriedTools?: CarriedTools;
  /** Hosted tools the client offered that the serving hosts do not run, left out of the call (hosted-tools.ts): the reply names them. */
  omittedTools?: string[];
  /**
   * Tools the client runs that only its own format has (the messages `bash_20250124`,
   * `text_editor_20250728`…), by type: carried in its body passed whole; admission refuses the
   * request when a host that may serve it would translate it.
   */
  wholeOnlyTools?: string[];
  /**
   * The form the reply's text must take, when the client asked for JSON (absent: text). Every host
   * kind sends it in its own terms; admission sends a request only to hosts that take the mode asked
   * for (HostKind.limits' `outputFormats`).
   */
  outputFormat?: OutputFormat;
  /**
   * Fields of the client's format only its own hosts honour (chat-completions `logprobs`, a
   * `response_format` json_schema without a schema), named: carried in its body passed whole; admission refuses the
   * request when a host that may serve it would translate it.
   */
  wholeOnlyFields?: string[];
}

/**
 * Structured output: `json_object`, any JSON object (OpenAI's JSON mode, Gemini's `application/json`
 * without a schema); `json_schema`, JSON that the schema (JSON Schema, as the client wrote it)
 * describes, with the name, description and strictness the OpenAI formats give it. `openApiSchema`:
 * the schema as a Gemini client gave it, in the API's OpenAPI subset (`responseSchema`), which Google's
 * hosts are sent as it is; `schema` is its translation for the others.
 */
export type OutputFormat =
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      schema: Record<string, unknown>;
      name?: string;
      description?: string;
      strict?: boolean;
      openApiSchema?: Record<string, unknown>;
    };

export type OutputFormatType = OutputFormat['type'];

/**
 * The name OpenAI's formats require of a schema (`json_schema.name`, `text.format.name`), for one asked
 * for in a format that names none (Anthropic's, Gemini's).
 */
export const schemaNameOf = (format: Extract<OutputFormat, { type: 'json_schema' }>): string => format.name ?? 'response';

/** A request's tools, as a surface classifies them. */
export interface ToolsAsked {
  /** The hosted tools offered, by type (in the client's order; repeats allowed). */
  hosted: string[];
  /** Whether the client offers tools of its own (functions) too. */
  clientTools: boolean;
  /** What the tool choice requires: one hosted tool (by type), some tool (any), or nothing. */
  required: { hosted: string } | 'any' | null;
}

/**
 * The hosted tools carried, by class: a host passed the client's body whole finds them in it (each
 * bounded to `maxUses`); a host translating the request adds its own tool for each class.
 */
export interface CarriedTools {
  classes: HostedToolClass[];
  /** The most uses of each class a host may make on this request: what its reservation holds for. */
  maxUses: number;
  /** The class the client's tool_choice requires the model to use. */
  required?: HostedToolClass;
}

export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high';

/** The wire formats clients and hosts speak, by name. */
export type WireFormat = 'chat-completions' | 'messages' | 'responses';

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'stop_sequence' | 'content_filter';

/**
 * Tokens by class, as a host counted them. The input classes do not overlap: input neither read
 * from nor written to the cache, input read from it, input written to it for 5 minutes or for an
 * hour. Output includes reasoning; `reasoningTokens` says how much of it was, for reporting.
 */
export interface Usage {
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  /** Uses of tools the host ran itself, as the host counted them, by class: billed per use (absent: none). */
  hostedToolUses?: HostedToolUses;
}

/**
 * The classes of hosted-tool use a host reports and the catalogue prices per 1,000 uses, named as
 * the catalogue's `pricing` names them: web searches (the messages format's `web_search_requests`, the
 * Responses format's `web_search_call` items, Gemini's grounding queries), fetches, code runs, file searches, images.
 */
export const HOSTED_TOOL_CLASSES = ['webSearch', 'webFetch', 'codeExecution', 'fileSearch', 'imageGeneration'] as const;
export type HostedToolClass = (typeof HOSTED_TOOL_CLASSES)[number];
export type HostedToolUses = Partial<Record<HostedToolClass, number>>;

/**
 * The canonical stream. `ready`: the upstream accepted the request (its response has started);
 * `text`: a piece of the reply; `reasoning`: a piece of the model's reasoning shown before it
 * (`signature`, when the host signs it, closes one block of reasoning); `tool_call`: a piece of a tool call (`index` identifies the call
 * within the reply; `id` and `name` come with its first piece); `finish`: why the reply ended;
 * `usage`: tokens as the host has counted them so far, before or after `finish`; a later one
 * replaces an earlier (a host may count input at the start and output only at the end);
 * `upstream_id`: the host's own id for a reply passed whole, which its client sees (recorded with
 * the settlement, so the request can be found by it; not sent on); `citation`: a page cited for a
 * passage of the text (see Citation).
 * Failures are the Observable's error (a HostError).
 */
export type CanonicalEvent =
  | { type: 'ready' }
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string; signature?: string }
  | { type: 'tool_call'; index: number; id?: string; name?: string; argumentsDelta: string }
  | { type: 'finish'; reason: FinishReason; stopSequence?: string }
  | { type: 'usage'; usage: Usage }
  | { type: 'upstream_id'; id: string }
  | Citation
  | PassThrough;

/**
 * A web page the host cites for a passage of the reply's text (a hosted web search's result):
 * the passage is characters [start, end) of the reply's text (its text events joined, in order).
 * It comes once the passage has. Clients of a format with citations by URL get it.
 */
export interface Citation {
  type: 'citation';
  url: string;
  title: string;
  start: number;
  end: number;
}

/**
 * What the upstream sent, for a request passed through in the client's own format: each stream
 * message (`event`, and `data` parsed), or the whole reply (`data` alone). It travels beside the
 * canonical events decoded from the same message (which the pipeline counts and bills by), and
 * the surface sends it on in place of its own translation.
 */
export interface PassThrough {
  type: 'pass_through';
  event?: string;
  data: Record<string, unknown>;
}

/** A host's id for its reply as an event, when it is one (visible ASCII, at most 256 characters): hosts send what they like. */
export const upstreamIdOf = (value: unknown): CanonicalEvent | null =>
  typeof value === 'string' && /^[\x21-\x7e]{1,256}$/.test(value) ? { type: 'upstream_id', id: value } : null;

/** Whether an event is output the client sees (no fallback once some went out, and a cut bills it). */
export const isOutput = (event: CanonicalEvent): boolean =>
  event.type === 'text' || event.type === 'tool_call' || event.type === 'reasoning';

/** How a host call failed; `beforeOutput` says whether any text or tool call had been produced. */
export type HostFailureKind =
  | 'connection' // could not connect, or the connection broke
  | 'status' // the upstream answered with an error status
  | 'timeout' // no answer (or no first byte) in time
  | 'malformed' // the upstream's stream could not be understood
  | 'upstream_error' // the upstream reported an error inside its stream
  | 'circuit_open'; // not called: it has been failing, and its circuit breaker lets nothing through for now

export class HostError extends Error {
  constructor(
    readonly kind: HostFailureKind,
    message: string,
    readonly status: number | null = null,
    readonly beforeOutput = true,
    /** How long the upstream asked to be left alone (its `Retry-After`, in ms), when it said. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'HostError';
  }

  /** Worth trying the model's next host: nothing was produced and the failure is the host's. */
  get retryable(): boolean {
    if (!this.beforeOutput) return false;
    if (this.kind !== 'status') return this.kind !== 'malformed';
    return this.status === 429 || this.status === 404 || (this.status ?? 0) >= 500 || this.status === 401 || this.status === 403;
  }
}

/** A thinking budget as an effort, for hosts that take only an effort: up to 4,096 tokens is low, up to 16,384 medium, more high. */
export function effortOf(reasoning: CanonicalRequest['reasoning']): ReasoningEffort | undefined {
  if (reasoning?.effort !== undefined) return reasoning.effort;
  const budget = reasoning?.budgetTokens;
  if (budget === undefined) return undefined;
  return budget <= 4096 ? 'low' : budget <= 16384 ? 'medium' : 'high';
}
