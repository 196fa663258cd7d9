import { DynamicModule, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AlertsModule } from '../alerts/alerts.module';
import { InferenceModule } from '../inference/inference.module';
import { KeysModule } from '../keys/keys.module';
import { AlertsDashboardController } from './alerts/alerts.controller';
import { CreditNotesModule } from '../credit-notes/credit-notes.module';
import { CreditNotesController } from './billing/credit-notes.controller';
import { KeysController } from './keys/keys.controller';
import { MembersController } from './members/members.controller';
import { OrganizationsController } from './organizations/organizations.controller';
import { PlaygroundController } from './playground/playground.controller';
import { DASHBOARD_SETTINGS, DashboardSettings } from './session/dashboard-settings';
import { SessionController } from './session/session.controller';
import { SessionGuard } from './session/session.guard';
import { SessionTokens } from './session/sessions';
import { SignIn, SignUp } from './session/sign-in';
import { DashboardLedgerController } from './ledger/ledger.controller';
import { StatementsController } from './statements/statements.controller';
import { UsageController } from './usage/usage.controller';
import { UsageExportDownloadController } from './usage/usage-export.controller';
import { UsageExportModule } from '../usage-export/usage-export.module';

/**
 * The dashboard's API, under /dashboard/api, one slice per use case. Signed-in people only (a
 * session cookie, never an API key; see SessionGuard), each request confined to the
 * organizations the user belongs to.
 */
@Module({})
export class DashboardModule {
  static forSettings(tokens: SessionTokens, settings: DashboardSettings): DynamicModule {
    return {
      module: DashboardModule,
      imports: [CqrsModule, InferenceModule, KeysModule, AlertsModule, UsageExportModule, CreditNotesModule],
      controllers: [
        SessionController,
        OrganizationsController,
        KeysController,
        MembersController,
        UsageController,
        DashboardLedgerController,
        CreditNotesController,
        UsageExportDownloadController,
        StatementsController,
        PlaygroundController,
        AlertsDashboardController,
      ],
      providers: [
        { provide: SessionTokens, useValue: tokens },
        { provide: DASHBOARD_SETTINGS, useValue: settings },
        SessionGuard,
        SignIn,
        SignUp,
      ],
    };
  }
}
