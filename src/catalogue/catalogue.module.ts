import { DynamicModule, Global, Module } from '@nestjs/common';
import { Catalogue } from './catalogue';

/** The catalogue, loaded before Nest starts, provided once for every module that reads it. */
@Global()
@Module({})
export class CatalogueModule {
  static forCatalogue(catalogue: Catalogue): DynamicModule {
    const providers = [{ provide: Catalogue, useValue: catalogue }];
    return { module: CatalogueModule, providers, exports: providers };
  }
}
