import { Body, Controller, HttpCode, Inject, Post, Req, Res, UseFilters } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config/config';
import { chatCompletionsErrors } from '../../http/api-error';
import { requireKey } from '../../http/credentials';
import { schemaValidation } from '../../http/schema-validation';
import { InferenceCommand } from '../../inference/inference.command';
import { factsOf } from '../../observability/request-facts';
import { CONFIG } from '../../runtime/runtime.module';
import { respond } from '../respond';
import { ChatCompletionRequest, chatCompletionRequestSchema } from './chat-completions.schema';
import { chunkSerializer, completionBody, errorBody, toCanonical } from './chat-completions.wire';
import { routingOfBody } from '../../routing/preferences';

const bodyValidation = schemaValidation<ChatCompletionRequest>(chatCompletionRequestSchema);

@Controller('api/v1/chat')
@UseFilters(chatCompletionsErrors)
export class ChatCompletionsController {
  constructor(
    private readonly commands: CommandBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Post('completions')
  @HttpCode(200)
  async create(
    @Body(bodyValidation) body: ChatCompletionRequest,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const apiKey = requireKey(request);
    const canonical = toCanonical(body);
    const result = await this.commands.execute(
      new InferenceCommand({
        surface: 'chat-completions',
        apiKey,
        model: body.model,
        request: canonical,
        routing: routingOfBody(body as unknown as Record<string, unknown>, body.model, canonical, request.headers),
        requestId: request.id,
        facts: factsOf(request),
      }),
    );
    const includeUsage = body.stream_options?.include_usage === true;
    return respond(
      reply,
      result,
      { serializer: (r) => chunkSerializer(r, includeUsage), body: completionBody, error: errorBody },
      this.config.sseKeepAliveMs,
    );
  }
}
