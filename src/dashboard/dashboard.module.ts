import { DynamicModule, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { Catalogue } from '../catalogue/catalogue';
import { DashboardController, DashboardSettings } from './dashboard.controller';
import { SessionTokens } from './sessions';

@Module({})
export class DashboardModule {
  static forSettings(catalogue: Catalogue, tokens: SessionTokens, settings: DashboardSettings): DynamicModule {
    return {
      module: DashboardModule,
      imports: [CqrsModule],
      controllers: [DashboardController],
      providers: [
        { provide: Catalogue, useValue: catalogue },
        { provide: SessionTokens, useValue: tokens },
        { provide: 'DASHBOARD_SETTINGS', useValue: settings },
      ],
    };
  }
}
