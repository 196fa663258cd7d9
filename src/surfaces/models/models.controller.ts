import { ArgumentsHost, Catch, Controller, ExceptionFilter, Get, Param, Query, Req, UseFilters, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Catalogue, CatalogueModel } from '../../catalogue/catalogue';
import { ApiError, chatCompletionsError, replyWithError } from '../../http/api-error';
import { servableModel } from '../../inference/admission';
import { AnyKeyHeaderGuard } from '../api-key.guard';
import { messagesError } from '../messages/messages.wire';

const describe = (model: CatalogueModel) => {
  const host = model.hosts.find((h) => h.host.usable) ?? model.hosts[0];
  return {
    id: model.slug,
    object: 'model',
    /** chat (the chat routes) or embedding (POST /embeddings). */
    kind: model.kind,
    created: model.created,
    owned_by: model.slug.split('/')[0],
    name: model.name,
    uuid: model.id,
    context_length: model.contextLength,
    max_output_tokens: model.maxOutputTokens,
    pricing: {
      input: host.listPrices.input,
      output: host.listPrices.output,
      cache_read: host.listPrices.cacheRead,
      cache_write: host.listPrices.cacheWrite,
      cache_write_1h: host.listPrices.cacheWrite1h,
      unit: 'USD per million tokens',
      // Long-context bands as OpenRouter lists them (`pricing.overrides`): from `min_prompt_tokens`
      // prompt tokens (the cache's included) on, every token of the request at these prices.
      ...(host.listBands.length === 0
        ? {}
        : {
            overrides: host.listBands.map(({ aboveInputTokens, prices }) => ({
              min_prompt_tokens: aboveInputTokens + 1,
              input: prices.input,
              output: prices.output,
              cache_read: prices.cacheRead,
              cache_write: prices.cacheWrite,
              cache_write_1h: prices.cacheWrite1h,
            })),
          }),
    },
    // The hosted tools its host runs and prices per use (`{"web_search": "10.00"}`), when there are any.
    ...(host.listPrices.hostedToolUses === undefined
      ? {}
      : {
          hosted_tool_pricing: {
            ...Object.fromEntries(
              Object.entries(host.listPrices.hostedToolUses).map(([toolClass, price]) => [
                toolClass.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
                price,
              ]),
            ),
            unit: 'USD per 1,000 uses',
          },
        }),
  };
};

/**
 * Anthropic's SDKs send `anthropic-version` with every call: such a caller gets the Models API's
 * shapes (its chat models, newest first, in pages) and the messages format's errors.
 */
const fromAnthropicClient = (request: FastifyRequest): boolean => request.headers['anthropic-version'] !== undefined;

/** A model as Anthropic's Models API describes one (its `ModelInfo`). */
const anthropicModel = (model: CatalogueModel) => ({
  type: 'model',
  id: model.slug,
  display_name: model.name,
  // RFC 3339; the epoch when the release date is unknown, as the API says it may be.
  created_at: new Date(model.created * 1000).toISOString(),
  max_input_tokens: model.contextLength,
  max_tokens: model.maxOutputTokens,
});

/** The Models API's page parameters: `limit` (1 to 1,000, 20 unsaid) and one cursor, `after_id` or `before_id`. */
interface PageAsked {
  limit?: string;
  after_id?: string;
  before_id?: string;
}

const DEFAULT_PAGE = 20;
const LARGEST_PAGE = 1000;

/**
 * One page of `ids` (in the list's order): `limit` of them after the one named `after_id`, or
 * just before the one named `before_id`, or from the start; `hasMore` says whether more lie in
 * the page's direction. A string names what is wrong with what was asked.
 */
export function pageOf(ids: string[], asked: PageAsked): { from: number; to: number; hasMore: boolean } | string {
  const limit = asked.limit === undefined ? DEFAULT_PAGE : Number(asked.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > LARGEST_PAGE) return `limit must be an integer from 1 to ${LARGEST_PAGE}`;
  if (asked.after_id !== undefined && asked.before_id !== undefined) return 'give after_id or before_id, not both';
  const cursor = asked.before_id ?? asked.after_id;
  if (cursor === undefined) return { from: 0, to: Math.min(limit, ids.length), hasMore: ids.length > limit };
  const at = ids.indexOf(cursor);
  if (at === -1)
    return `${asked.before_id === undefined ? 'after_id' : 'before_id'} "${cursor.slice(0, 256)}" is not a model of this list`;
  if (asked.before_id !== undefined) return { from: Math.max(0, at - limit), to: at, hasMore: at > limit };
  return { from: at + 1, to: Math.min(at + 1 + limit, ids.length), hasMore: ids.length > at + 1 + limit };
}

/** Errors in the messages format for Anthropic's clients, in chat-completions' for the others. */
@Catch()
class ModelListErrors implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const format = fromAnthropicClient(request) ? messagesError : chatCompletionsError;
    replyWithError(host.switchToHttp().getResponse<FastifyReply>(), exception, format);
  }
}

/**
 * GET /api/v1/models: the catalogue models some configured host can serve; GET /api/v1/models/{slug
 * or uuid}: one of them. OpenAI's and OpenRouter's shapes, or Anthropic's for its clients (the key
 * in `x-api-key` too, as they send it).
 */
@Controller('api/v1/models')
@UseGuards(AnyKeyHeaderGuard)
@UseFilters(new ModelListErrors())
export class ModelsController {
  constructor(private readonly catalogue: Catalogue) {}

  @Get()
  list(@Req() request: FastifyRequest, @Query() asked: PageAsked) {
    const servable = this.catalogue.servable();
    if (!fromAnthropicClient(request)) return { object: 'list', data: servable.map(describe) };
    const chat = servable.filter((m) => m.kind === 'chat').sort((a, b) => b.created - a.created || a.slug.localeCompare(b.slug));
    const page = pageOf(
      chat.map((m) => m.slug),
      asked,
    );
    if (typeof page === 'string') throw new ApiError('invalid_request', page);
    const data = chat.slice(page.from, page.to).map(anthropicModel);
    return { data, has_more: page.hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  }

  /** The slug keeps its slash (/models/openai/gpt-4o-mini) or comes encoded (/models/openai%2Fgpt-4o-mini). */
  @Get('*')
  retrieve(@Req() request: FastifyRequest, @Param('*') ref: string) {
    const model = this.catalogue.find(ref);
    const anthropic = fromAnthropicClient(request);
    // As a request naming it would be told: unknown, or in the catalogue with none of its hosts
    // configured. Echoed bounded (and masked): a key pasted into the path is not sent back.
    const servable = servableModel(ref.slice(0, 256), model, anthropic ? 'chat' : model?.kind);
    if (servable.kind === 'refuse') throw servable.error;
    return anthropic ? anthropicModel(servable.model) : describe(servable.model);
  }
}
