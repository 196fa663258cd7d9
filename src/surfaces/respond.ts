import type { FastifyReply } from 'fastify';
import type { ErrorFormat } from '../http/api-error';
import { OMITTED_REASONING_HEADER, type InferenceResult } from '../inference/inference.command';
import { collectReply, Reply } from '../inference/reduce';
import { ledgerPositionHeader } from '../read-your-writes/ledger-position';
import { StreamSerializer, streamSse } from './sse';

/** What a surface is, as far as answering goes: its stream, its whole reply and its errors. */
export interface SurfaceWire {
  serializer(result: InferenceResult): StreamSerializer;
  body(result: InferenceResult, reply: Reply): unknown;
  error: ErrorFormat;
}

/** Why the host called went without the reasoning asked for, when it did (see HostKind.omittedReasoning). */
const omittedReasoningHeader = (result: InferenceResult): Record<string, string> =>
  result.omittedReasoning ? { [OMITTED_REASONING_HEADER]: result.omittedReasoning } : {};

/**
 * Answers a pipeline result the way every surface does: as server-sent events when the request
 * asked for a stream, or as one body reduced from the same stream. A client that leaves stops the upstream call either way.
 */
export async function respond(
  reply: FastifyReply,
  result: InferenceResult,
  wire: SurfaceWire,
  keepAliveMs: number,
): Promise<void> {
  if (result.headers) void reply.headers(result.headers);
  if (result.stream) {
    return streamSse(reply, result.events, wire.serializer(result), {
      keepAliveMs,
      // With the error's own headers (a shutdown's Retry-After), as a whole reply's error carries them.
      failBeforeStart: (error) =>
        void reply
          .headers(error.headers ?? {})
          .status(error.status)
          .send(wire.error(error, reply.request.id)),
      lateHeaders: () => omittedReasoningHeader(result),
    });
  }
  const whole = await collectReply(result.events, reply.raw);
  if (whole.billed) void reply.headers(ledgerPositionHeader(whole.billed.position));
  if (result.omittedReasoning) void reply.header(OMITTED_REASONING_HEADER, result.omittedReasoning);
  void reply.send(wire.body(result, whole));
}
