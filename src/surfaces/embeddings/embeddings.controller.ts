import { Body, Controller, HttpCode, Post, Req, Res, UseFilters } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { factsOf } from '../../observability/request-facts';
import { EmbeddingsCommand } from '../../embeddings/embeddings.command';
import { chatCompletionsErrors } from '../../http/api-error';
import { requireKey } from '../../http/credentials';
import { schemaValidation } from '../../http/schema-validation';
import { EmbeddingsRequest, embeddingsRequestSchema } from './embeddings.schema';
import { embeddingsBody } from './embeddings.wire';
import { ledgerPositionHeader } from '../../read-your-writes/ledger-position';
import { EndsItsOwnRequests } from '../../http/grace-end';

const bodyValidation = schemaValidation<EmbeddingsRequest>(embeddingsRequestSchema);

/** POST /api/v1/embeddings: `Authorization: Bearer`, errors in the chat-completions format. */
@Controller('api/v1')
@UseFilters(chatCompletionsErrors)
export class EmbeddingsController {
  constructor(private readonly commands: CommandBus) {}

  @Post('embeddings')
  @EndsItsOwnRequests()
  @HttpCode(200)
  async create(
    @Body(bodyValidation) body: EmbeddingsRequest,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<unknown> {
    const result = await this.commands.execute(
      new EmbeddingsCommand({
        apiKey: requireKey(request),
        model: body.model,
        body,
        requestId: request.id,
        facts: factsOf(request),
      }),
    );
    void reply.headers({ ...result.headers, ...ledgerPositionHeader(result.billed.position) });
    return embeddingsBody(result);
  }
}
