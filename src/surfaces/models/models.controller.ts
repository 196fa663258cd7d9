import { Controller, Get, Param, UseFilters, UseGuards } from '@nestjs/common';
import { Catalogue, CatalogueModel } from '../../catalogue/catalogue';
import { chatCompletionsErrors } from '../../http/api-error';
import { servableModel } from '../../inference/admission';
import { ApiKeyGuard } from '../api-key.guard';

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

/** GET /api/v1/models: the catalogue models some configured host can serve; GET /api/v1/models/{slug or uuid}: one of them. */
@Controller('api/v1/models')
@UseGuards(ApiKeyGuard)
@UseFilters(chatCompletionsErrors)
export class ModelsController {
  constructor(private readonly catalogue: Catalogue) {}

  @Get()
  list() {
    return { object: 'list', data: this.catalogue.servable().map(describe) };
  }

  /** The slug keeps its slash (/models/openai/gpt-4o-mini) or comes encoded (/models/openai%2Fgpt-4o-mini). */
  @Get('*')
  retrieve(@Param('*') ref: string) {
    const model = this.catalogue.find(ref);
    // As a request naming it would be told: unknown, or in the catalogue with none of its hosts
    // configured. Echoed bounded (and masked): a key pasted into the path is not sent back.
    const servable = servableModel(ref.slice(0, 256), model, model?.kind);
    if (servable.kind === 'refuse') throw servable.error;
    return describe(servable.model);
  }
}
