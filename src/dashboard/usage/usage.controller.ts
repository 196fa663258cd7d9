import { Controller, Get, Inject, Query, UseFilters } from '@nestjs/common';
import type { Config } from '../../config/config';
import type { ProjectionStore } from '../../projections/projection-store';
import { CONFIG, PROJECTIONS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, SignedIn } from '../session/session.guard';
import { usageFilterOf, type UsageQuery, usageReport } from './usage-report';

/** The active organization's requests, a page at a time, and its spend per day. */
@Controller('dashboard/api/usage')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class UsageController {
  constructor(
    @Inject(PROJECTIONS) private readonly projections: ProjectionStore,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Get()
  async usage(@ActiveOrgId() orgId: string, @Query() query: UsageQuery) {
    const filter = usageFilterOf(query, Date.now());
    const [log, keys, daily] = await Promise.all([
      this.projections.recentRequests(orgId, this.config.requestLogRetention),
      this.projections.keysOf(orgId),
      this.projections.dailySpend(orgId),
    ]);
    return usageReport(filter, log, keys, daily);
  }
}
