import type { CanonicalEvent, CanonicalRequest } from '../../canonical/canonical';
import { anthropicHost, CONTEXT_1M_BETA, thinkingLeftOut } from '../anthropic/anthropic.host';
import type { HostKind, HostSettings, SseMessage, StreamDecoder, UpstreamRequest, WireLimits } from '../host-kind';
import {
  bedrockMessage,
  converseBody,
  ConverseStreamDecoder,
  decodeConverseReply,
  isAnthropicModel,
  parseObject,
} from './bedrock.converse';
import { eventStreamFraming } from './bedrock.event-stream';
import { invokeBody, InvokeStreamDecoder } from './bedrock.invoke';
import { bedrockAuthorizer } from './bedrock.signing';

/**
 * Amazon Bedrock Runtime hosts. `api: "converse"` (the default) speaks Converse to any model;
 * `api: "invoke"` speaks InvokeModel with Anthropic's Messages body, for Anthropic's models. Calls
 * are signed with SigV4 (AWS's credential chain) or carry a Bedrock API key; streams are AWS's
 * binary event stream.
 */

export const BEDROCK_APIS = ['converse', 'invoke'] as const;

/** The operation of a call, after `/model/{modelId}`. */
const OPERATIONS: Record<(typeof BEDROCK_APIS)[number], { whole: string; streamed: string }> = {
  converse: { whole: 'converse', streamed: 'converse-stream' },
  invoke: { whole: 'invoke', streamed: 'invoke-with-response-stream' },
};

function buildRequest(
  request: CanonicalRequest,
  hostModel: string,
  apiKey: string | null,
  settings?: HostSettings,
): UpstreamRequest {
  const api = settings?.api === 'invoke' ? 'invoke' : 'converse';
  const operation = OPERATIONS[api][request.stream ? 'streamed' : 'whole'];
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: request.stream ? 'application/vnd.amazon.eventstream' : 'application/json',
  };
  if (apiKey !== null) headers.authorization = `Bearer ${apiKey}`;
  // A model id may hold `:` (a version) or be an ARN (`/`): one path segment, encoded.
  const path = `/model/${encodeURIComponent(hostModel)}/${operation}`;
  if (api === 'converse') return { path, headers, body: converseBody(request, hostModel) };
  const { body, passThrough } = invokeBody(request, hostModel);
  return { path, headers, body, ...(passThrough ? { passThrough } : {}) };
}

/**
 * Why a call leaves its reasoning out: InvokeModel's as the anthropic kind's; Converse's, for
 * Anthropic's models (the only ones it sends thinking to), as the same decision.
 */
function omittedReasoning(request: CanonicalRequest, hostModel: string, settings?: HostSettings): string | null {
  if (settings?.api === 'invoke') return anthropicHost.omittedReasoning?.(request, hostModel) ?? null;
  return isAnthropicModel(hostModel) ? thinkingLeftOut(request) : null;
}

/** A stream of either operation: what its first message is says which (`chunk`: InvokeModel's). */
class BedrockStreamDecoder implements StreamDecoder {
  private inner: StreamDecoder | null = null;

  constructor(private readonly passThrough: boolean) {}

  get done(): boolean {
    return this.inner?.done ?? false;
  }

  push(message: SseMessage): CanonicalEvent[] {
    this.inner ??= message.event === 'chunk' ? new InvokeStreamDecoder(this.passThrough) : new ConverseStreamDecoder();
    return this.inner.push(message);
  }
}

/** A whole reply of either operation: Converse's has `output`, InvokeModel's is Anthropic's message. */
function decodeReply(body: string, passThrough = false): CanonicalEvent[] {
  const reply = parseObject(body, 'reply');
  return 'output' in reply ? decodeConverseReply(reply) : anthropicHost.decodeReply(body, passThrough);
}

/** Bedrock's error bodies are `{"message": …}` (the type is in `x-amzn-ErrorType`); anything else, its text. */
function errorMessage(status: number, body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    const message = typeof parsed === 'object' && parsed !== null ? bedrockMessage(parsed as Record<string, unknown>) : null;
    if (message) return message;
  } catch {
    // Not JSON (a proxy's page): its text is the best message.
  }
  return body.trim().slice(0, 300) || `upstream answered ${status}`;
}

/**
 * What Converse refuses (the Bedrock Runtime API reference): more than 2,500 stop sequences
 * (InferenceConfiguration), a tool name (ToolSpecification) outside `[a-zA-Z0-9_-]+` or over 64.
 */
export const CONVERSE_LIMITS: WireLimits = {
  stopSequences: 2500,
  toolNames: { pattern: /^[a-zA-Z0-9_-]{1,64}$/, rule: 'letters, digits, underscores and dashes, at most 64 characters' },
  // Structured output (OutputFormat) takes a JSON schema only: `json_schema` is its one type.
  outputFormats: { takes: ['json_schema'], field: 'outputConfig.textFormat' },
};

/**
 * InvokeModel's Messages body: Anthropic's structured outputs, a schema only, and its betas (the 1M
 * context among them) as `anthropic_beta` (the rest of its limits unstated).
 */
const INVOKE_LIMITS: WireLimits = {
  outputFormats: { takes: ['json_schema'], field: 'output_config.format' },
  longContextBeta: CONTEXT_1M_BETA,
};

export const bedrockHost: HostKind<'bedrock'> = {
  name: 'bedrock',
  settings: [{ name: 'region' }, { name: 'api', default: 'converse', values: BEDROCK_APIS }],
  defaultBaseUrl: (settings) => `https://bedrock-runtime.${settings.region}.amazonaws.com`,
  authorizer: bedrockAuthorizer,
  framing: eventStreamFraming,
  buildRequest,
  // InvokeModel takes a messages client's body whole (invokeBody); Converse is a translation.
  wholeFormat: (_hostModel, settings) => (settings?.api === 'invoke' ? 'messages' : null),
  // InvokeModel's body is the model's own format, whose limits AWS does not state.
  limits: (_hostModel, settings) => (settings.api === 'invoke' ? INVOKE_LIMITS : CONVERSE_LIMITS),
  omittedReasoning,
  decoder: (passThrough = false) => new BedrockStreamDecoder(passThrough),
  decodeReply,
  errorMessage,
};
