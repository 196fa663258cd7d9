import { All, Controller, Inject, OnModuleInit, Req, UseFilters } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config/config';
import { ApiError, SurfaceErrorFilter } from '../../http/api-error';
import { requireKey } from '../../http/credentials';
import { schemaValidation } from '../../http/schema-validation';
import { InferenceCommand } from '../../inference/inference.command';
import { factsOf } from '../../observability/request-facts';
import { maskSecrets } from '../../key-secret/key-secret';
import { CONFIG } from '../../runtime/runtime.module';
import { IdentityService } from '../../identity/identity.service';
import { bodyReadAfterKey } from '../api-key.guard';
import { serveDirectly } from '../direct-route';
import { respond } from '../respond';
import { ResponsesRequest, responsesRequestSchema } from './responses.schema';
import { eventSerializer, replyContextOf, responseBody, responsesError, toCanonical } from './responses.wire';
import { routingOfBody } from '../../routing/preferences';

const bodyValidation = schemaValidation<ResponsesRequest>(responsesRequestSchema);

/**
 * POST /responses: the Responses wire format onto the one inference command. Stateless: nothing
 * is stored, so the routes that would read a stored response answer 404 saying so.
 */
@Controller('api/v1/responses')
@UseFilters(new SurfaceErrorFilter(responsesError))
export class ResponsesController implements OnModuleInit {
  constructor(
    private readonly commands: CommandBus,
    @Inject(CONFIG) private readonly config: Config,
    private readonly adapter: HttpAdapterHost,
    private readonly identity: IdentityService,
  ) {}

  /** POST /api/v1/responses, served by Fastify directly (a hot route: see serveDirectly). */
  onModuleInit(): void {
    const fastify = this.adapter.httpAdapter.getInstance<FastifyInstance>();
    serveDirectly(fastify, '/api/v1/responses', responsesError, (request, reply) => this.create(request, reply));
  }

  async create(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // A missing key is a 401 before the body is looked at.
    const apiKey = requireKey(request);
    const { body, canonical } = await bodyReadAfterKey(this.identity, apiKey, () => {
      const body = bodyValidation.transform(request.body, { type: 'body' });
      return { body, canonical: toCanonical(body) };
    });
    const result = await this.commands.execute(
      new InferenceCommand({
        surface: 'responses',
        apiKey,
        model: body.model,
        request: canonical,
        routing: routingOfBody(body as unknown as Record<string, unknown>, body.model, canonical, request.headers),
        requestId: request.id,
        facts: factsOf(request),
      }),
    );
    const context = replyContextOf(body);
    return respond(
      reply,
      result,
      {
        serializer: (r) => eventSerializer(r, context),
        body: (r, whole) => responseBody(r, whole, context),
        error: responsesError,
      },
      this.config.sseKeepAliveMs,
    );
  }

  /** GET /responses/{id}, its input items, cancel, delete: there is no stored response to act on. */
  @All('*')
  notStored(@Req() request: FastifyRequest): never {
    const path = request.url.split('?')[0];
    throw new ApiError(
      'not_found',
      `no such route: ${request.method} ${maskSecrets(path.slice(0, 200))}: the gateway is stateless and keeps no responses to get, cancel or delete; send the whole conversation in each POST /api/v1/responses`,
    );
  }
}
