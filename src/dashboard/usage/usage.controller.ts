import { Controller, Get, Inject, Query, UseFilters } from '@nestjs/common';
import type { Config } from '../../config/config';
import type { ReadModels } from '../../projections/read-models';
import { CONFIG, READ_MODELS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, SignedIn } from '../session/session.guard';
import { matchingRequests, narrowed, usageFilterOf, type UsageQuery, usageReport } from './usage-report';

/** The active organization's requests, a page at a time, and its spend per day. */
@Controller('dashboard/api/usage')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class UsageController {
  constructor(
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Get()
  async usage(@ActiveOrgId() orgId: string, @Query() query: UsageQuery) {
    const filter = usageFilterOf(query, Date.now());
    const [log, keys, daily] = await Promise.all([
      this.readModels.recentRequests(orgId, this.config.requestLogRetention),
      this.readModels.keysOf(orgId),
      this.readModels.dailySpend(orgId),
    ]);
    // Refunds shown beside each row; filtered by key or model, the total is net of every matching request's.
    const { matching, shown } = matchingRequests(filter, log);
    const refundable = (narrowed(filter) ? matching : shown).flatMap((e) => (e.reservationId === null ? [] : [e.reservationId]));
    return usageReport(filter, log, keys, daily, await this.readModels.refunded(orgId, refundable));
  }
}
