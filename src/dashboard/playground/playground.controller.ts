import { Body, Controller, Get, HttpCode, Inject, Post, Req, Res, UseFilters } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Catalogue } from '../../catalogue/catalogue';
import type { Config } from '../../config/config';
import { bodyValidation } from '../../http/validation';
import { CONFIG } from '../../runtime/runtime.module';
import { nativeWire } from '../../surfaces/native/native.wire';
import { respond } from '../../surfaces/respond';
import { dashboardError, dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, SignedIn } from '../session/session.guard';
import { PlaygroundDto } from './playground.dto';
import { playgroundInference } from './playground-inference';
import { factsOf } from '../../observability/request-facts';
import { EndsItsOwnRequests } from '../../http/grace-end';

/** The models to pick from, and a conversation with one, streamed in the native route's events and billed to the active organization. */
@Controller('dashboard/api')
@UseFilters(dashboardErrors)
export class PlaygroundController {
  constructor(
    private readonly commands: CommandBus,
    private readonly catalogue: Catalogue,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Get('models')
  models() {
    return { data: this.catalogue.servable().map((m) => ({ id: m.slug, name: m.name, kind: m.kind })) };
  }

  @Post('playground')
  @EndsItsOwnRequests()
  @HttpCode(200)
  @SignedIn({ activeOrg: true })
  async playground(
    @Body(bodyValidation) body: PlaygroundDto,
    @ActiveOrgId() orgId: string,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const result = await this.commands.execute(playgroundInference(body, orgId, request.id, factsOf(request)));
    return respond(reply, result, { ...nativeWire, error: dashboardError }, this.config.sseKeepAliveMs);
  }
}
