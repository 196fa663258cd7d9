import { type CanonicalEvent, type CanonicalRequest, HostError, isOutput } from '../../canonical/canonical';
import { anthropicHost } from '../anthropic/anthropic.host';
import type { SseMessage, StreamDecoder } from '../host-kind';
import { parseObject, streamException } from './bedrock.converse';

/**
 * Anthropic's models through InvokeModel (`/model/{id}/invoke`, `/invoke-with-response-stream`):
 * the body is Anthropic's Messages request, so nothing is lost that Converse has no field for (cache
 * breakpoints and their 1-hour writes, betas, thinking blocks given back); a messages client's own
 * body goes whole. The translation and the decoding are the anthropic kind's own.
 */

/** The Messages API version Bedrock takes, in the body. */
const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/**
 * The anthropic kind's request as Bedrock takes it: the model is in the path and the stream in the
 * operation, not the body; the version and the betas (`anthropic-beta` on Anthropic's API) are in it.
 */
export function invokeBody(
  request: CanonicalRequest,
  hostModel: string,
): { body: Record<string, unknown>; passThrough: boolean } {
  const messages = anthropicHost.buildRequest(request, hostModel, null);
  const { model: _model, stream: _stream, ...rest } = messages.body as Record<string, unknown>;
  const body: Record<string, unknown> = { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...rest };
  if (request.betas && request.betas.length > 0) body.anthropic_beta = request.betas;
  return { body, passThrough: messages.passThrough === true };
}

/**
 * An InvokeModelWithResponseStream stream: `chunk` events whose `bytes` (base64) each hold one event
 * of Anthropic's stream, read by the anthropic kind's decoder (its `message_stop` completes it).
 */
export class InvokeStreamDecoder implements StreamDecoder {
  private readonly messages: StreamDecoder;
  private produced = false;

  constructor(passThrough: boolean) {
    this.messages = anthropicHost.decoder(passThrough);
  }

  get done(): boolean {
    return this.messages.done;
  }

  push(message: SseMessage): CanonicalEvent[] {
    const exception = streamException(message, this.produced);
    if (exception) throw exception;
    // Other event types (none today) carry nothing of the reply.
    if (message.event !== 'chunk') return [];
    const chunk = parseObject(message.data, 'chunk event');
    if (typeof chunk.bytes !== 'string') throw new HostError('malformed', 'chunk event without bytes');
    const events = this.messages.push({ data: Buffer.from(chunk.bytes, 'base64').toString('utf8') });
    if (events.some(isOutput)) this.produced = true;
    return events;
  }
}
