import {
  Body,
  CanActivate,
  Controller,
  ExecutionContext,
  Get,
  HttpCode,
  Inject,
  Injectable,
  Param,
  Post,
  Req,
  Res,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Catalogue } from '../../catalogue/catalogue';
import type { Config } from '../../config/config';
import { ApiError, SurfaceErrorFilter } from '../../http/api-error';
import { ordinaryKey, requireKey } from '../../http/credentials';
import { schemaValidation } from '../../http/schema-validation';
import { IdentityService } from '../../identity/identity.service';
import { CountTokensQuery } from '../../inference/count-tokens.query';
import { servableModel } from '../../inference/admission';
import { InferenceCommand } from '../../inference/inference.command';
import { factsOf } from '../../observability/request-facts';
import { CONFIG } from '../../runtime/runtime.module';
import { respond } from '../respond';
import {
  countTokensRequestSchema,
  CountTokensRequest,
  GenerateContentRequest,
  generateContentRequestSchema,
} from './gemini.schema';
import {
  catalogueRefOf,
  chunkSerializer,
  geminiError,
  methodCallOf,
  modelOf,
  responseBody,
  showsThoughts,
  toCanonical,
} from './gemini.wire';
import { routingOfHeaders } from '../../routing/preferences';
import { EndsItsOwnRequests } from '../../http/grace-end';

/** The key from `x-goog-api-key`, the `key` query parameter or `Authorization: Bearer` (a 401 without one). */
const geminiKey = (request: FastifyRequest): string => requireKey(request, 'x-goog-api-key, key or bearer');

/** A key must be present (401) before the body is looked at; whether it is valid is the inference command's to say. */
@Injectable()
export class GeminiKeyPresentGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    geminiKey(context.switchToHttp().getRequest<FastifyRequest>());
    return true;
  }
}

/** For the model routes, which only read: the key must exist, not be revoked, and be an ordinary one. */
@Injectable()
export class GeminiKeyGuard implements CanActivate {
  constructor(private readonly identity: IdentityService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    ordinaryKey(await this.identity.authenticate(geminiKey(context.switchToHttp().getRequest<FastifyRequest>())));
    return true;
  }
}

const generateValidation = schemaValidation<GenerateContentRequest>(generateContentRequestSchema);
const countValidation = schemaValidation<CountTokensRequest>(countTokensRequestSchema);

/**
 * The Gemini API's routes, as Google's clients append them to a base URL (`{base}/api`):
 * `/v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`, `:countTokens`, and
 * the model list. The model is a catalogue slug (its slash as is, or encoded), its UUID, or the
 * slug's part after the slash when no other model's is the same.
 */
@Controller('api/v1beta/models')
@UseFilters(new SurfaceErrorFilter(geminiError))
export class GeminiController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly catalogue: Catalogue,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Post('*')
  @EndsItsOwnRequests()
  @HttpCode(200)
  @UseGuards(GeminiKeyPresentGuard)
  async call(
    @Param('*') path: string,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const { model, method } = methodCallOf(path);
    const ref = catalogueRefOf(model, this.catalogue.models);
    if (method === 'countTokens') {
      const asked = countValidation.transform(body, { type: 'body' });
      const contents = asked.generateContentRequest ?? { contents: asked.contents ?? [] };
      if (contents.contents.length === 0) throw new ApiError('invalid_request', 'contents is required (and not empty)');
      const { inputTokens } = await this.queries.execute(
        new CountTokensQuery({ apiKey: geminiKey(request), model: ref, body: null, request: toCanonical(contents, false) }),
      );
      void reply.send({ totalTokens: inputTokens });
      return;
    }
    const stream = method === 'streamGenerateContent';
    if (stream && (request.query as Record<string, unknown>).alt !== 'sse')
      throw new ApiError(
        'invalid_request',
        'streamGenerateContent is served as server-sent events only: add "?alt=sse" (as Google\'s clients do)',
      );
    const asked = generateValidation.transform(body, { type: 'body' });
    const apiKey = geminiKey(request);
    const canonical = toCanonical(asked, stream);
    const result = await this.commands.execute(
      new InferenceCommand({
        surface: 'gemini',
        apiKey,
        model: ref,
        request: canonical,
        // Google's request body has no place for them: the provider preferences and fallbacks come as headers.
        routing: routingOfHeaders(ref, canonical, request.headers),
        requestId: request.id,
        facts: factsOf(request),
      }),
    );
    const thoughts = showsThoughts(asked);
    return respond(
      reply,
      result,
      {
        serializer: (r) => chunkSerializer(r, thoughts),
        body: (r, whole) => responseBody(r, whole, thoughts),
        error: geminiError,
      },
      this.config.sseKeepAliveMs,
    );
  }

  /** The catalogue's chat models some configured host can serve, in one page. */
  @Get()
  @UseGuards(GeminiKeyGuard)
  list() {
    return {
      models: this.catalogue
        .servable()
        .filter((m) => m.kind === 'chat')
        .map(modelOf),
    };
  }

  @Get('*')
  @UseGuards(GeminiKeyGuard)
  retrieve(@Param('*') path: string) {
    const model = this.catalogue.find(catalogueRefOf(path, this.catalogue.models));
    if (!model || model.kind !== 'chat')
      throw new ApiError(
        'model_not_found',
        `model "${path.slice(0, 256)}" is not in the catalogue (GET /api/v1beta/models lists them)`,
      );
    // In the catalogue with no host configured: said as a request naming it would be told.
    const servable = servableModel(model.slug, model);
    if (servable.kind === 'refuse') throw servable.error;
    return modelOf(model);
  }
}
