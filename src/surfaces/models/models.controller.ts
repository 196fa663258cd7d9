import { Controller, Get, UseFilters, UseGuards } from '@nestjs/common';
import { Catalogue, CatalogueModel } from '../../catalogue/catalogue';
import { chatCompletionsErrors } from '../../http/api-error';
import { ApiKeyGuard } from '../../identity/api-key.guard';

const describe = (model: CatalogueModel) => {
  const host = model.hosts.find((h) => h.host.usable) ?? model.hosts[0];
  return {
    id: model.slug,
    object: 'model',
    created: model.created,
    owned_by: model.slug.split('/')[0],
    name: model.name,
    uuid: model.id,
    context_length: model.contextLength,
    max_output_tokens: model.maxOutputTokens,
    pricing: { input: host.listPrices.input, output: host.listPrices.output, unit: 'USD per million tokens' },
  };
};

/** GET /api/v1/models: the catalogue models some configured host can serve. */
@Controller('api/v1/models')
@UseGuards(ApiKeyGuard)
@UseFilters(chatCompletionsErrors)
export class ModelsController {
  constructor(private readonly catalogue: Catalogue) {}

  @Get()
  list() {
    return { object: 'list', data: this.catalogue.servable().map(describe) };
  }
}
