import {
  Body,
  CanActivate,
  Controller,
  ExecutionContext,
  HttpCode,
  Inject,
  Injectable,
  OnModuleInit,
  Post,
  Req,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config/config';
import { ApiError, SurfaceErrorFilter } from '../../http/api-error';
import { requireKey } from '../../http/credentials';
import { schemaValidation } from '../../http/schema-validation';
import { CountTokensQuery } from '../../inference/count-tokens.query';
import { InferenceCommand } from '../../inference/inference.command';
import { factsOf } from '../../observability/request-facts';
import { CONFIG } from '../../runtime/runtime.module';
import { IdentityService } from '../../identity/identity.service';
import { bodyReadAfterKey } from '../api-key.guard';
import { serveDirectly } from '../direct-route';
import { respond, SurfaceWire } from '../respond';
import { CountTokensRequest, countTokensRequestSchema, MessagesRequest, messagesRequestSchema } from './messages.schema';
import { betasOf, eventSerializer, messageBody, messagesError, toCanonical } from './messages.wire';
import { routingOfHeaders } from '../../routing/preferences';
import { EndsItsOwnRequests } from '../../http/grace-end';

const FIRST_VERSION = '2023-06-01';

const messagesWire: SurfaceWire = { serializer: eventSerializer, body: messageBody, error: messagesError };

/** The key from `x-api-key` or `Authorization: Bearer` (a 401 without one). */
const messagesKey = (request: FastifyRequest): string => requireKey(request, 'x-api-key or bearer');

const isDate = (text: string) =>
  /^\d{4}-\d{2}-\d{2}$/.test(text) &&
  !Number.isNaN(Date.parse(`${text}T00:00:00Z`)) &&
  new Date(`${text}T00:00:00Z`).toISOString().startsWith(text);

/**
 * Versions already accepted: a client sends the same one every time. Capped, since any real date
 * from the first version on is accepted and a caller could send thousands of them.
 */
const acceptedVersions = new Set<string>();
const ACCEPTED_VERSIONS_KEPT = 64;
const isAcceptedVersion = (version: string): boolean => {
  if (acceptedVersions.has(version)) return true;
  if (!isDate(version) || version < FIRST_VERSION) return false;
  if (acceptedVersions.size < ACCEPTED_VERSIONS_KEPT) acceptedVersions.add(version);
  return true;
};

/**
 * A key must be present (401) and a dated version from 2023-06-01 on, in `compat-version` or
 * `anthropic-version` (400): checked before the body, as the format's own API does.
 */
function checkMessagesHeaders(request: FastifyRequest): void {
  messagesKey(request); // present, or a 401 now
  const header = request.headers['compat-version'] ?? request.headers['anthropic-version'];
  const version = typeof header === 'string' ? header.trim() : '';
  if (version === '') {
    throw new ApiError('invalid_request', 'missing version header: send "anthropic-version: 2023-06-01" (or "compat-version")');
  }
  if (!isAcceptedVersion(version)) {
    throw new ApiError('invalid_request', `version "${version}" is not a dated version from ${FIRST_VERSION} on`);
  }
}

/** The headers' checks, for the routes Nest serves. */
@Injectable()
export class MessagesHeadersGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    checkMessagesHeaders(context.switchToHttp().getRequest<FastifyRequest>());
    return true;
  }
}

const bodyValidation = schemaValidation<MessagesRequest>(messagesRequestSchema);
const countTokensValidation = schemaValidation<CountTokensRequest>(countTokensRequestSchema);

/** The betas the client asked for: passed to hosts that speak this format. */
const betasOfRequest = (request: FastifyRequest): string[] => betasOf(request.headers['anthropic-beta']);

@Controller('api/v1')
@UseGuards(MessagesHeadersGuard)
@UseFilters(new SurfaceErrorFilter(messagesError))
export class MessagesController implements OnModuleInit {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(CONFIG) private readonly config: Config,
    private readonly adapter: HttpAdapterHost,
    private readonly identity: IdentityService,
  ) {}

  /** POST /api/v1/messages, served by Fastify directly (a hot route: see serveDirectly). */
  onModuleInit(): void {
    const fastify = this.adapter.httpAdapter.getInstance<FastifyInstance>();
    serveDirectly(fastify, '/api/v1/messages', messagesError, (request, reply) => this.create(request, reply));
  }

  async create(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    checkMessagesHeaders(request);
    const apiKey = messagesKey(request);
    const { body, canonical } = await bodyReadAfterKey(this.identity, apiKey, () => {
      const body = bodyValidation.transform(request.body, { type: 'body' });
      return { body, canonical: toCanonical(body, betasOfRequest(request)) };
    });
    const result = await this.commands.execute(
      new InferenceCommand({
        surface: 'messages',
        apiKey,
        model: body.model,
        request: canonical,
        routing: routingOfHeaders(body.model, canonical, request.headers),
        requestId: request.id,
        facts: factsOf(request),
      }),
    );
    return respond(reply, result, messagesWire, this.config.sseKeepAliveMs);
  }

  /** `{"input_tokens": N}`: counted by a host of the model that can, else estimated here. Never billed. */
  @Post('messages/count_tokens')
  @EndsItsOwnRequests()
  @HttpCode(200)
  async countTokens(@Body(countTokensValidation) body: CountTokensRequest, @Req() request: FastifyRequest): Promise<unknown> {
    const { inputTokens, counted } = await this.queries.execute(
      new CountTokensQuery({
        apiKey: messagesKey(request),
        model: body.model,
        body,
        request: toCanonical(body, betasOfRequest(request)),
      }),
    );
    return counted ?? { input_tokens: inputTokens };
  }
}
