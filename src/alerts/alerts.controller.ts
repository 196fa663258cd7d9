import { Body, Controller, Delete, Get, Header, HttpCode, Post, Put, Req, UseFilters, UseGuards } from '@nestjs/common';
import { ApiError, chatCompletionsErrors } from '../http/api-error';
import { schemaValidation } from '../http/schema-validation';
import { ManagementKeyGuard } from '../keys/management-key.guard';
import type { KeyedRequest } from '../surfaces/api-key.guard';
import { type AlertsBody, alertsSchema } from './alerts.schema';
import { type AlertsAsked, AlertsService, checkUrl, creditsOf } from './alerts.service';

/** The settings a body asks for, in the alerts' terms (amounts in nano-credits). */
export function askedOf(body: AlertsBody): AlertsAsked {
  return {
    url: checkUrl(body.url),
    balanceBelow: creditsOf(body.balance_below, 'balance_below'),
    daySpendAbove: creditsOf(body.day_spend_above, 'day_spend_above'),
    keyLimits: body.key_limits ?? false,
  };
}

/**
 * The management API's alerts: the organization of the management key calling sets its webhook and
 * thresholds (the signing secret in the answer of the first PUT and of POST /secret, only then),
 * reads them, turns them off, and sends a test alert.
 */
@Controller('api/v1/alerts')
@UseGuards(ManagementKeyGuard)
@UseFilters(chatCompletionsErrors)
export class AlertsController {
  constructor(private readonly alerts: AlertsService) {}

  @Get()
  async read(@Req() request: KeyedRequest) {
    const alerts = await this.alerts.read(request.apiKey.orgId);
    if (!alerts) throw new ApiError('not_found', 'alerts are not configured for this organization');
    return { data: alerts };
  }

  /** The answers that may hold the signing secret are not to be kept by any cache. */
  @Put()
  @Header('cache-control', 'no-store')
  async configure(@Req() request: KeyedRequest, @Body(schemaValidation<AlertsBody>(alertsSchema)) body: AlertsBody) {
    const { alerts, secret } = await this.alerts.configure(request.apiKey.orgId, request.apiKey.keyId, askedOf(body));
    return { data: alerts, ...(secret === undefined ? {} : { secret }) };
  }

  @Delete()
  @HttpCode(204)
  async turnOff(@Req() request: KeyedRequest) {
    await this.alerts.turnOff(request.apiKey.orgId, request.apiKey.keyId);
  }

  @Post('secret')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  rotateSecret(@Req() request: KeyedRequest) {
    return this.alerts.rotateSecret(request.apiKey.orgId, request.apiKey.keyId);
  }

  @Post('test')
  @HttpCode(202)
  sendTest(@Req() request: KeyedRequest) {
    return this.alerts.sendTest(request.apiKey.orgId, request.apiKey.keyId);
  }
}
