import { DynamicModule, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { InferenceModule } from '../inference/inference.module';
import { DashboardController, DashboardSettings } from './dashboard.controller';
import { SessionTokens } from './sessions';

@Module({})
export class DashboardModule {
  static forSettings(tokens: SessionTokens, settings: DashboardSettings): DynamicModule {
    return {
      module: DashboardModule,
      imports: [CqrsModule, InferenceModule],
      controllers: [DashboardController],
      providers: [
        { provide: SessionTokens, useValue: tokens },
        { provide: 'DASHBOARD_SETTINGS', useValue: settings },
      ],
    };
  }
}
