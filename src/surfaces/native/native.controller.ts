import { Body, Controller, HttpCode, Inject, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config/config';
import { ApiError, SurfaceErrorFilter } from '../../http/api-error';
import { requireKey } from '../../http/credentials';
import { InferenceCommand } from '../../inference/inference.command';
import { factsOf } from '../../observability/request-facts';
import { CONFIG } from '../../runtime/runtime.module';
import { schemaValidation } from '../../http/schema-validation';
import { BearerPresentGuard } from '../api-key.guard';
import { respond } from '../respond';
import { NativeChatRequest, nativeChatRequestSchema } from './native.schema';
import { nativeError, nativeWire, toCanonical } from './native.wire';
import { routingOfBody } from '../../routing/preferences';
import { EndsItsOwnRequests } from '../../http/grace-end';

/**
 * The model named in the path: a slug (it has a slash: /models/openai/gpt-4o-mini/chat),
 * its URL-encoded form (/models/openai%2Fgpt-4o-mini/chat) or the catalogue UUID.
 */
function modelOf(request: FastifyRequest): string {
  // Fastify has decoded the path once (%2F is a slash here); decoding again would take a
  // twice-encoded "%252F" for a slash too.
  const path = (request.params as Record<string, string>)['*'] ?? '';
  const match = /^(.+)\/chat\/?$/.exec(path);
  if (!match) throw new ApiError('not_found', 'no such route: use POST /api/v1/models/{model}/chat');
  return match[1];
}

const bodyValidation = schemaValidation<NativeChatRequest>(nativeChatRequestSchema);

@Controller('api/v1/models')
@UseGuards(BearerPresentGuard)
@UseFilters(new SurfaceErrorFilter(nativeError))
export class NativeController {
  constructor(
    private readonly commands: CommandBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Post('*')
  @EndsItsOwnRequests()
  @HttpCode(200)
  async chat(
    @Body(bodyValidation) body: NativeChatRequest,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const apiKey = requireKey(request);
    const model = modelOf(request);
    const canonical = toCanonical(body);
    const result = await this.commands.execute(
      new InferenceCommand({
        surface: 'native',
        apiKey,
        model,
        request: canonical,
        routing: routingOfBody(body as unknown as Record<string, unknown>, model, canonical, request.headers),
        requestId: request.id,
        facts: factsOf(request),
      }),
    );
    return respond(reply, result, nativeWire, this.config.sseKeepAliveMs);
  }
}
