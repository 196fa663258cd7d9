import { Body, Controller, Get, HttpCode, Inject, Post, UseFilters } from '@nestjs/common';
import { askedOf } from '../../alerts/alerts.controller';
import { type AlertsBody, alertsSchema } from '../../alerts/alerts.schema';
import { AlertsService } from '../../alerts/alerts.service';
import { ApiError } from '../../http/api-error';
import { mayManageBilling } from '../../identity/organization.decider';
import { schemaValidation } from '../../http/schema-validation';
import type { ReadModels } from '../../projections/read-models';
import { READ_MODELS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, CurrentSession, SignedIn } from '../session/session.guard';
import type { Session } from '../session/sessions';

/**
 * The active organization's alerts, for its owners: the webhook, the thresholds, a test alert, a new
 * signing secret (shown in the answer, that once). The same commands as the management API's (POST
 * throughout, as the dashboard's other changes: the session's CSRF token goes with each).
 */
@Controller('dashboard/api/alerts')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class AlertsDashboardController {
  constructor(
    private readonly alerts: AlertsService,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

  private async owner(orgId: string, session: Session): Promise<string> {
    // Alerts are about the organization's money: those who may see its books (its owners) set them.
    if (!mayManageBilling((await this.readModels.membership(orgId, session.userId)) ?? undefined)) {
      throw new ApiError('forbidden', "only the organization's owners manage its alerts");
    }
    return session.userId;
  }

  @Get()
  async read(@ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    await this.owner(orgId, session);
    return { data: await this.alerts.read(orgId) };
  }

  @Post()
  @HttpCode(200)
  async configure(
    @Body(schemaValidation<AlertsBody>(alertsSchema)) body: AlertsBody,
    @ActiveOrgId() orgId: string,
    @CurrentSession() session: Session,
  ) {
    const by = await this.owner(orgId, session);
    const { alerts, secret } = await this.alerts.configure(orgId, by, askedOf(body));
    return { data: alerts, ...(secret === undefined ? {} : { secret }) };
  }

  @Post('off')
  @HttpCode(204)
  async turnOff(@ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    await this.alerts.turnOff(orgId, await this.owner(orgId, session));
  }

  @Post('secret')
  @HttpCode(200)
  async rotateSecret(@ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    return this.alerts.rotateSecret(orgId, await this.owner(orgId, session));
  }

  @Post('test')
  @HttpCode(202)
  async sendTest(@ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    return this.alerts.sendTest(orgId, await this.owner(orgId, session));
  }
}
