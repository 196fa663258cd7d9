import { DynamicModule, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AlertsModule } from './alerts/alerts.module';
import { KeysModule } from './keys/keys.module';
import { LedgerExportModule } from './ledger-export/ledger-export.module';
import { CreditsModule } from './credits/credits.module';
import { CreditNotesModule } from './credit-notes/credit-notes.module';
import { DashboardModule } from './dashboard/dashboard.module';
import type { SessionTokens } from './dashboard/session/sessions';
import type { Catalogue } from './catalogue/catalogue';
import { CatalogueModule } from './catalogue/catalogue.module';
import type { HostHealthReader } from './routing/plan';
import { RoutingModule } from './routing/routing.module';
import type { Runtime } from './runtime/runtime';
import { SurfacesModule } from './surfaces/surfaces.module';
import { RuntimeModule } from './runtime/runtime.module';
import { UsageExportModule } from './usage-export/usage-export.module';

@Module({})
export class AppModule {
  static forRuntime(runtime: Runtime, catalogue: Catalogue, tokens: SessionTokens, health?: HostHealthReader): DynamicModule {
    return {
      module: AppModule,
      imports: [
        RuntimeModule.forRuntime(runtime),
        CqrsModule.forRoot(),
        CatalogueModule.forCatalogue(catalogue),
        RoutingModule.forHealth(health),
        CreditsModule,
        CreditNotesModule,
        KeysModule,
        LedgerExportModule,
        AlertsModule,
        UsageExportModule,
        SurfacesModule,
        DashboardModule.forSettings(tokens, { signupEnabled: runtime.config.dashboardSignup }),
      ],
    };
  }
}
