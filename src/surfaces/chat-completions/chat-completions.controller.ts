import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config/config';
import { chatCompletionsError } from '../../http/api-error';
import { requireKey } from '../../http/credentials';
import { schemaValidation } from '../../http/schema-validation';
import { InferenceCommand } from '../../inference/inference.command';
import { factsOf } from '../../observability/request-facts';
import { CONFIG } from '../../runtime/runtime.module';
import { IdentityService } from '../../identity/identity.service';
import { bodyReadAfterKey } from '../api-key.guard';
import { serveDirectly } from '../direct-route';
import { respond } from '../respond';
import { ChatCompletionRequest, chatCompletionRequestSchema } from './chat-completions.schema';
import { chunkSerializer, completionBody, errorBody, toCanonical } from './chat-completions.wire';
import { routingOfBody } from '../../routing/preferences';

const bodyValidation = schemaValidation<ChatCompletionRequest>(chatCompletionRequestSchema);

/** POST /api/v1/chat/completions, served by Fastify directly (a hot route: see serveDirectly). */
@Injectable()
export class ChatCompletionsRoute implements OnModuleInit {
  constructor(
    private readonly commands: CommandBus,
    @Inject(CONFIG) private readonly config: Config,
    private readonly adapter: HttpAdapterHost,
    private readonly identity: IdentityService,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapter.httpAdapter.getInstance<FastifyInstance>();
    serveDirectly(fastify, '/api/v1/chat/completions', chatCompletionsError, (request, reply) => this.create(request, reply));
  }

  async create(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // No key is a 401 before the body is looked at, as on the other surfaces.
    const apiKey = requireKey(request);
    const { body, canonical } = await bodyReadAfterKey(this.identity, apiKey, () => {
      const body = bodyValidation.transform(request.body, { type: 'body' });
      return { body, canonical: toCanonical(body) };
    });
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
